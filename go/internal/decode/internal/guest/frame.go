package guest

import (
	"encoding/binary"
	"errors"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pubsub-go/pubsub-go/go/internal/decode/engine"
)

// The pg_init config is framed by the guest SDK's sdk.EncodeConfig (the
// decode package's DecoderConfig.configs): host and guests share one
// implementation of that format. The input is framed here, straight from an Arrow array, without the
// [][]byte that sdk.EncodeInput takes.

// inputSize is the size of the pg_decode input for payloads: u32 count,
// count+1 u32 offsets, then the bytes (null payloads count as empty).
func inputSize(p *array.Binary) int {
	n := p.Len()
	size := 4 + 4*(n+1)
	if p.NullN() == 0 {
		return size + len(p.ValueBytes())
	}
	for i := 0; i < n; i++ {
		if p.IsValid(i) {
			size += len(p.Value(i))
		}
	}
	return size
}

// fillInput writes the pg_decode input into b (len(b) == inputSize(p)).
func fillInput(b []byte, p *array.Binary) {
	n := p.Len()
	binary.LittleEndian.PutUint32(b, uint32(n))
	offs := b[4 : 4+4*(n+1)]
	data := b[4+4*(n+1):]
	if p.NullN() == 0 {
		vo := p.ValueOffsets()
		if base := vo[0]; base != 0 { // a slice of a larger array
			for i, o := range vo {
				binary.LittleEndian.PutUint32(offs[4*i:], uint32(o-base))
			}
		} else { // Arrow's offsets are little-endian int32, as the frame's are
			copy(offs, arrow.Int32Traits.CastToBytes(vo))
		}
		copyCached(data, p.ValueBytes())
		return
	}
	at := 0
	binary.LittleEndian.PutUint32(offs, 0)
	for i := 0; i < n; i++ {
		if p.IsValid(i) {
			at += copy(data[at:], p.Value(i))
		}
		binary.LittleEndian.PutUint32(offs[4*(i+1):], uint32(at))
	}
}

// isClean reports errors after which the instance is still sound.
func isClean(err error) bool {
	return errors.Is(err, engine.ErrDecoder) && !errors.Is(err, engine.ErrCrashed)
}

// cachedCopyMax is the most runtime.memmove is asked to copy at once: from
// 1 MiB on, Go's memmove on amd64 writes with non-temporal stores
// (memmove_amd64.s, gobble_big_data_fwd), which leave the destination out
// of the cache, and the guest reads its input right after it is written.
const cachedCopyMax = 512 << 10

// copyCached is copy(dst, src) in pieces the cache keeps.
func copyCached(dst, src []byte) {
	for len(src) > cachedCopyMax && len(dst) > cachedCopyMax {
		copy(dst[:cachedCopyMax], src[:cachedCopyMax])
		dst, src = dst[cachedCopyMax:], src[cachedCopyMax:]
	}
	copy(dst, src)
}
