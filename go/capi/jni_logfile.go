package main

// The JVM source's batch-log entry when the log is on a local disk: the
// library writes its chunks to the file straight from C memory, so a
// batch's IPC bytes reach the page cache in one copy, not through a Java
// array and the JDK's own buffer (a Java stream has no way to write from
// an address). Entries on other file systems (gs://, hdfs://, s3a://) go
// through Hadoop's streams in Java. The chunk layout is BatchLog.java's:
// [kind byte][int32 big-endian length][bytes].

/*
#include <stdint.h>
*/
import "C"

import (
	"encoding/binary"
	"io"
	"os"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"

	"github.com/pubsub-go/pubsub-go/go/internal/rpc"
)

// logChunkBatch is BatchLog.BATCH: a chunk holding a batch as an Arrow IPC stream.
const logChunkBatch = 'B'

// logFile is one entry being written. A task writes its entry from one
// thread; the mutex keeps a close racing a write (a cancelled task) safe.
type logFile struct {
	mu   sync.Mutex
	f    *os.File
	path string
}

var logFiles = table[*logFile]{what: "batch-log file"}

// Java_io_pubsubgo_spark_bridge_Native_logFileOpen creates the file at
// path (a NUL-terminated string; it must not exist) for writing.
//
//export Java_io_pubsubgo_spark_bridge_Native_logFileOpen
func Java_io_pubsubgo_spark_bridge_Native_logFileOpen(env, cls unsafe.Pointer, path, handleOut, errAddr C.int64_t) C.int {
	return guard(errp(errAddr), func() error {
		if path == 0 || handleOut == 0 {
			return rpc.Errorf(codes.InvalidArgument, "logFileOpen: the path and the handle output must not be NULL")
		}
		p := C.GoString((*C.char)(ptr(path)))
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return rpc.Errorf(codes.FailedPrecondition, "batch log: creating %s: %v", p, err)
		}
		*(*C.uint64_t)(ptr(handleOut)) = C.uint64_t(logFiles.Put(&logFile{f: f, path: p}))
		return nil
	})
}

// Java_io_pubsubgo_spark_bridge_Native_logFileChunk appends one chunk of
// kind holding the n bytes at data.
//
//export Java_io_pubsubgo_spark_bridge_Native_logFileChunk
func Java_io_pubsubgo_spark_bridge_Native_logFileChunk(env, cls unsafe.Pointer, h C.int64_t, kind C.int, data, n, errAddr C.int64_t) C.int {
	return guard(errp(errAddr), func() error {
		l, err := logFiles.get(C.uint64_t(h))
		if err != nil {
			return err
		}
		if n < 0 || n > 1<<31-1 || (n > 0 && data == 0) {
			return rpc.Errorf(codes.InvalidArgument, "batch log: a chunk of %d bytes at address %d; expected 0..2 GiB from a non-NULL address", int64(n), int64(data))
		}
		var head [5]byte
		head[0] = byte(kind)
		binary.BigEndian.PutUint32(head[1:], uint32(n))
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.f == nil {
			return closedHandle(logFiles.what, C.uint64_t(h))
		}
		if _, err := l.f.Write(head[:]); err != nil {
			return rpc.Errorf(codes.Unavailable, "batch log: writing %s: %v", l.path, err)
		}
		if n > 0 {
			if _, err := l.f.Write(unsafe.Slice((*byte)(ptr(data)), int(n))); err != nil {
				return rpc.Errorf(codes.Unavailable, "batch log: writing %s: %v", l.path, err)
			}
		}
		return nil
	})
}

// Java_io_pubsubgo_spark_bridge_Native_logFileClose closes the entry's
// file, after flushing it to the disk when sync != 0 (an entry about to
// be published must survive a crash of the machine, as hsync makes
// Hadoop's streams do).
//
//export Java_io_pubsubgo_spark_bridge_Native_logFileClose
func Java_io_pubsubgo_spark_bridge_Native_logFileClose(env, cls unsafe.Pointer, h C.int64_t, sync C.int, errAddr C.int64_t) C.int {
	return guard(errp(errAddr), func() error {
		return closeHandle(&logFiles, C.uint64_t(h), func(l *logFile) error {
			l.mu.Lock()
			defer l.mu.Unlock()
			f := l.f
			l.f = nil
			if sync != 0 {
				if err := f.Sync(); err != nil {
					f.Close()
					return rpc.Errorf(codes.Unavailable, "batch log: flushing %s to disk: %v", l.path, err)
				}
			}
			if err := f.Close(); err != nil {
				return rpc.Errorf(codes.Unavailable, "batch log: closing %s: %v", l.path, err)
			}
			return nil
		})
	})
}

// record appends a chunk of kind holding rec as an Arrow IPC stream,
// serialized straight into the file: the record's buffers go from where
// they lie to the page cache, with no buffer in between. The chunk's
// length is known only afterwards, so it is written into the header then.
func (l *logFile) record(kind byte, rec arrow.RecordBatch) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return rpc.Errorf(codes.FailedPrecondition, "batch log: %s is closed", l.path)
	}
	start, err := l.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return rpc.Errorf(codes.Unavailable, "batch log: writing %s: %v", l.path, err)
	}
	head := [5]byte{kind}
	if _, err := l.f.Write(head[:]); err != nil {
		return rpc.Errorf(codes.Unavailable, "batch log: writing %s: %v", l.path, err)
	}
	body := &countingWriter{w: l.f}
	iw := ipc.NewWriter(body, ipc.WithSchema(rec.Schema()))
	err = iw.Write(rec)
	if err == nil {
		err = iw.Close()
	}
	if err != nil {
		return rpc.Errorf(codes.Unavailable, "batch log: writing a batch to %s: %v", l.path, err)
	}
	if body.n > 1<<31-1 {
		return rpc.Errorf(codes.ResourceExhausted, "batch log: a batch of %d bytes is over a chunk's 2 GiB; lower batchSize", body.n)
	}
	binary.BigEndian.PutUint32(head[1:], uint32(body.n))
	if _, err := l.f.WriteAt(head[1:], start+1); err != nil {
		return rpc.Errorf(codes.Unavailable, "batch log: writing %s: %v", l.path, err)
	}
	return nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}
