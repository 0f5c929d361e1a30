package wire

import "github.com/pubsub-go/pubsub-go/go/internal/cachehint"

// Parsing a response is bound by memory latency more than by instructions.
// A ReceivedMessage's fields sit at both ends of its payload: ack id,
// headers and the payload's first bytes at the start; attributes, message
// id and publish time at the end, next to the following message's start.
// The parser jumps over the payload from one end to the other, which the
// hardware's own read-ahead does not follow, and a response (up to a few MiB in
// 16 KiB frames) is larger than a core's L2 cache. In a Spark read at 1 KiB
// payloads the parse was 6.3% of all CPU (0.26 µs per message), its first
// read of each field (consumeTag) 2.2%; with lookaheadCursor, 4.7% and 0.5%
// (bench/tools/spark_cpu.py pubsub-go-defaults --perf).
//
// lookaheadCursor walks the response's top-level fields lookaheadMessages
// messages ahead of the parser and asks the CPU to load the lines around
// each message boundary, so that the parser finds them in cache. Its own
// reads (a tag and a length per message) hit lines it asked for
// lookaheadMessages messages earlier.
//
// lookaheadMessages: a message's parse takes ~100-150 ns in cache
// (BenchmarkParseFrames1KB), about one miss to memory, so one message ahead
// would barely cover the miss; four leave room for a busier memory system
// and stay within ~5 KiB of the parser.
const lookaheadMessages = 4

type lookaheadCursor struct {
	c    segCursor
	done bool
}

// start positions p at the beginning of the response and runs it
// lookaheadMessages messages ahead.
func (p *lookaheadCursor) start(c segCursor) {
	p.c, p.done = c, false
	for range lookaheadMessages {
		p.advance()
	}
}

// advance skips one top-level field and asks for the lines around the start of
// the next. It stops at anything it does not expect: the parser then runs
// without cache hints, and reports what is wrong itself.
func (p *lookaheadCursor) advance() {
	if p.done {
		return
	}
	tag, ok := p.c.varint()
	if !ok || tag&7 != 2 { // only length-delimited fields (received_messages) are expected
		p.done = true
		return
	}
	n, ok := p.c.varint()
	if !ok || n > uint64(p.c.left) {
		p.done = true
		return
	}
	p.c.skip(int(n))
	p.c.settle()
	if len(p.c.cur) == 0 {
		p.done = true
		return
	}
	// The two lines before hold the end of the message just skipped (its
	// attributes, message id, publish time: ~90 bytes at 2 attributes); the
	// next holds the rest of the following message's ack id and headers.
	at := &p.c.cur[0]
	cachehint.Line(at, -2*cachehint.CacheLine)
	cachehint.Line(at, -cachehint.CacheLine)
	cachehint.Line(at, 0)
	cachehint.Line(at, cachehint.CacheLine)
}
