package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// A leader walks the records of every batch a client produces before it
// appends it, compressed or not, as Kafka's LogValidator does: a batch whose
// records do not decode would otherwise be acknowledged, replicated, and
// stop every consumer of the partition at its offset for good. The walk
// streams: compressed records are decompressed through a fixed 64 KiB
// window and never held whole (snappy's raw block form excepted, whose
// format has no streaming decoder), key, value and header bytes are skipped
// rather than read, and the decoders and buffers come from a pool, so the
// check costs no allocation per batch or per record once warm.
//
// The bytes stored are always the bytes the client sent: validation reads
// the records and never rewrites them.

// Decompression bound. A produced batch is at most max.message.bytes as
// sent; its records may decompress to at most decompressRatio times that
// (but never less than minDecompressLimit, so small limits do not refuse
// ordinary compressible batches, and never more than maxDecompressLimit, so
// one request cannot buy seconds of CPU). Kafka itself has no such bound and
// would inflate a gzip bomb until its heap ran out; real record data
// compresses far below 64:1, and a producer told MESSAGE_TOO_LARGE splits
// its batch and retries.
const (
	decompressRatio    = 64
	minDecompressLimit = 64 << 20
	maxDecompressLimit = 1 << 30
)

// DecompressLimit is how many bytes the records of one produced batch may
// decompress to when the topic's max.message.bytes is maxMessageBytes:
// 64 x max.message.bytes, at least 64 MiB and at most 1 GiB.
func DecompressLimit(maxMessageBytes int64) int64 {
	return min(max(decompressRatio*max(maxMessageBytes, 0), minDecompressLimit), maxDecompressLimit)
}

// ProduceRules are what a leader checks a produced batch against beyond
// its own bytes: the topic's settings.
type ProduceRules struct {
	// TopicPartition is named in error messages, as Kafka names it.
	TopicPartition TopicPartition
	// Compacted: cleanup.policy includes compact, so every record needs a
	// key (Kafka refuses keyless records with INVALID_RECORD).
	Compacted bool
	// MaxDecompressedBytes bounds the records' decompressed size (see
	// DecompressLimit); 0 means DecompressLimit of the default
	// max.message.bytes.
	MaxDecompressedBytes int64

	// plain, when set, receives a compressed batch's records as the walk
	// decompresses them (appended to (*plain)[:0]), so Append can
	// recompress them into the topic's codec without decompressing twice.
	plain *[]byte
}

// ValidateProduce checks b as a leader checks a batch a client produced:
// everything Validate checks on the header, then every record, decompressing
// them first when the batch is compressed. Failures, none of which leave
// anything behind:
//   - ErrCorruptBatch (CORRUPT_MESSAGE): the records do not decompress, or
//     their framing is broken (lengths, varints longer than their type,
//     fields overrunning their record);
//   - ErrInvalidRecord (INVALID_RECORD): the records decode but break a rule
//     (fewer or more records than recordCount, offset deltas not 0..n-1),
//     and, as a *RecordErrors listing each record, keyless records on a
//     compacted topic;
//   - ErrRecordTooLarge (MESSAGE_TOO_LARGE): the records decompress to more
//     than rules.MaxDecompressedBytes.
func (b Batch) ValidateProduce(rules ProduceRules) (BatchInfo, error) {
	return b.validate(fromClient, &rules)
}

// RecordError is one record a produced batch was refused for, as Produce
// v8+ answers it in RecordErrors.
type RecordError struct {
	BatchIndex int32 // the record's index in its batch (Kafka's RelativeOffset)
	Message    string
}

// maxListedRecordErrors caps the records a refusal lists. Kafka lists every
// one, but a compressed batch of tiny keyless records would then buy a
// response hundreds of times its size; the message still counts them all.
const maxListedRecordErrors = 1000

// RecordErrors is the refusal of a batch because of some of its records:
// Kafka's RecordValidationException. It wraps ErrInvalidRecord.
type RecordErrors struct {
	Errors []RecordError // the first maxListedRecordErrors, in record order
	Total  int           // how many records failed
}

// Error is Kafka's message for the refusal, which Produce v8+ answers in
// ErrorMessage: the count and the first three record errors, in Java's list
// form.
func (e *RecordErrors) Error() string {
	var sb strings.Builder
	sb.WriteString("One or more records have been rejected due to ")
	sb.WriteString(strconv.Itoa(e.Total))
	sb.WriteString(" record errors in total, and only showing the first three errors at most: [")
	for i, re := range e.Errors[:min(len(e.Errors), 3)] {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "RecordError(batchIndex=%d, message='%s')", re.BatchIndex, re.Message)
	}
	sb.WriteString("]")
	return sb.String()
}

func (e *RecordErrors) Unwrap() error { return ErrInvalidRecord }

// Failures the record walk tells apart; each is wrapped in a storage error
// kind before it leaves the package.
var (
	errOverlongVarint   = errors.New("varint longer than its type allows")
	errDecompressTooBig = errors.New("decompressed records exceed the limit")
	errNoProgress       = errors.New("decompressor made no progress")
)

// recordWalk is one validation's state: the records as a stream, the
// pooled decoders that may feed it, and what the walk learned.
type recordWalk struct {
	// The stream: buf[pos:] is unread; base is how many bytes came before
	// buf. With src nil, buf is all the records (an uncompressed batch).
	buf  []byte
	pos  int
	base int64
	src  io.Reader
	// read counts decompressed bytes taken from src; more than limit stops
	// the walk.
	read, limit int64
	srcErr      error // sticky error (io.EOF included) src returned
	// plain, when collecting, gathers every decompressed byte.
	plain   []byte
	collect bool

	window [64 << 10]byte // decompression window buf points into
	br     bytes.Reader   // the compressed bytes, for the decoders
	gz     *gzip.Reader
	lz     *lz4.Reader
	zs     *zstd.Decoder
	sn     snappyReader
}

var walkPool = sync.Pool{New: func() any { return new(recordWalk) }}

func (w *recordWalk) consumed() int64 { return w.base + int64(w.pos) }

func (w *recordWalk) readByte() (byte, error) {
	if w.pos < len(w.buf) {
		c := w.buf[w.pos]
		w.pos++
		return c, nil
	}
	if err := w.fill(); err != nil {
		return 0, err
	}
	c := w.buf[w.pos]
	w.pos++
	return c, nil
}

// fill replaces the window with the next decompressed bytes, reading at
// most one byte past the limit so a bomb stops there.
func (w *recordWalk) fill() error {
	if w.src == nil {
		return io.EOF
	}
	if w.srcErr != nil {
		return w.srcErr
	}
	w.base += int64(len(w.buf))
	w.buf, w.pos = w.window[:0], 0
	room := int64(len(w.window))
	if left := w.limit - w.read + 1; left < room {
		room = left
	}
	for tries := 0; len(w.buf) == 0; tries++ {
		if tries == 100 {
			w.srcErr = errNoProgress
			return w.srcErr
		}
		n, err := w.src.Read(w.window[:room])
		w.buf = w.window[:n]
		w.read += int64(n)
		if w.read > w.limit {
			w.buf, w.srcErr = w.buf[:0], errDecompressTooBig
			return w.srcErr
		}
		if w.collect {
			w.plain = append(w.plain, w.buf...)
		}
		if err != nil {
			w.srcErr = err
			if n == 0 {
				return err
			}
		}
	}
	return nil
}

// varint reads a zig-zag varint of at most maxLen bytes (maxVarintBytes for
// Kafka's varint, maxVarlongBytes for its varlong) whose value fits the type. A
// stream ending before its first byte is io.EOF, inside it
// io.ErrUnexpectedEOF.
func (w *recordWalk) varint(maxLen int) (int64, error) {
	typeBits := uint(32)
	if maxLen == maxVarlongBytes {
		typeBits = 64
	}
	var ux uint64
	var shift uint
	for i := 0; i < maxLen; i++ {
		c, err := w.readByte()
		if err != nil {
			if err == io.EOF && i > 0 {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		if c < 0x80 {
			// The last byte may only carry the bits the type has left.
			if i == maxLen-1 && uint64(c) >= 1<<(typeBits-shift) {
				return 0, errOverlongVarint
			}
			ux |= uint64(c) << shift
			return int64(ux>>1) ^ -int64(ux&1), nil
		}
		ux |= uint64(c&0x7f) << shift
		shift += 7
	}
	return 0, errOverlongVarint
}

const (
	maxVarintBytes  = 5  // Kafka varint: 32 bits
	maxVarlongBytes = 10 // Kafka varlong: 64 bits
)

// skip consumes n bytes.
func (w *recordWalk) skip(n int64) error {
	for n > 0 {
		if avail := int64(len(w.buf) - w.pos); avail > 0 {
			k := min(avail, n)
			w.pos += int(k)
			n -= k
			continue
		}
		if err := w.fill(); err != nil {
			return err
		}
	}
	return nil
}

// open points the walk at the records of b, through a pooled decoder for
// its codec.
func (w *recordWalk) open(codec Compression, data []byte, limit int64) error {
	w.buf, w.pos, w.base, w.src, w.read, w.limit, w.srcErr = nil, 0, 0, nil, 0, limit, nil
	if codec == CompressionNone {
		w.buf = data
		return nil
	}
	w.br.Reset(data)
	switch codec {
	case CompressionGzip:
		if w.gz == nil {
			w.gz = new(gzip.Reader)
		}
		if err := w.gz.Reset(&w.br); err != nil {
			return err
		}
		w.src = w.gz
	case CompressionSnappy:
		w.sn.reset(data, limit)
		w.src = &w.sn
	case CompressionLZ4:
		if w.lz == nil {
			w.lz = lz4.NewReader(nil)
		}
		w.lz.Reset(&w.br)
		w.src = w.lz
	case CompressionZstd:
		if w.zs == nil {
			// One goroutine-free streaming decoder per pooled walk; its
			// window may not exceed what the whole batch may decompress to.
			d, err := zstd.NewReader(nil,
				zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderLowmem(false),
				zstd.WithDecoderMaxWindow(maxDecompressLimit),
				zstd.WithDecoderMaxMemory(maxDecompressLimit))
			if err != nil {
				return err
			}
			w.zs = d
		}
		if err := w.zs.Reset(&w.br); err != nil {
			return err
		}
		w.src = w.zs
	default:
		return fmt.Errorf("unknown compression codec %d", codec)
	}
	return nil
}

// release drops the references to the batch before the walk goes back to
// the pool.
func (w *recordWalk) release() {
	w.buf, w.src, w.plain, w.collect = nil, nil, nil, false
	w.br.Reset(nil)
	if w.zs != nil {
		_ = w.zs.Reset(nil)
	}
	w.sn.reset(nil, 0)
	walkPool.Put(w)
}

// walkRecords checks the records of a batch whose header validate has
// checked: compressed ones only on the client path (mode fromClient with
// rules), uncompressed ones always.
func (b Batch) walkRecords(mode validation, rules *ProduceRules, info BatchInfo) (out BatchInfo, err error) {
	codec := b.Compression()
	limit := int64(len(b))
	if rules != nil {
		limit = rules.MaxDecompressedBytes
		if limit <= 0 {
			limit = DecompressLimit(DefaultConfig().MaxMessageBytes)
		}
	}
	w := walkPool.Get().(*recordWalk)
	defer func() {
		// A decoder bug met on hostile input must refuse this batch, not
		// stop the broker; the walk is not pooled again after a panic.
		if p := recover(); p != nil {
			out, err = info, fmt.Errorf("%w: %s records: decoder failed: %v", ErrCorruptBatch, codec, p)
			return
		}
		if w.collect {
			*rules.plain = w.plain
		}
		w.release()
	}()
	if rules != nil && rules.plain != nil && codec != CompressionNone {
		w.collect, w.plain = true, (*rules.plain)[:0]
	}
	if err := w.open(codec, b[BatchHeaderSize:], limit); err != nil {
		return info, fmt.Errorf("%w: %s records do not decompress: %v", ErrCorruptBatch, codec, err)
	}
	return w.walk(b, mode, rules, info)
}

// walk reads every record: its framing must be exact, offset deltas 0..n-1
// (from a client) or increasing within the batch (from a log), and the
// stream must end right after the last one.
func (w *recordWalk) walk(b Batch, mode validation, rules *ProduceRules, info BatchInfo) (BatchInfo, error) {
	count, lastDelta := b.RecordCount(), b.LastOffsetDelta()
	baseTs := b.BaseTimestamp()
	codec := b.Compression()
	compacted := rules != nil && rules.Compacted
	var keyErrs *RecordErrors
	prevDelta := int64(-1)
	maxTs, minTs := int64(math64Min), int64(math64Max)
	var maxDelta int32
	// fail reports a record the walk could not read: the decompressor's
	// failures as such, a stream ending cleanly between records as Kafka's
	// "premature EOF", the rest as broken framing.
	fail := func(i int32, what string, err error) error {
		switch {
		case errors.Is(err, errDecompressTooBig):
			return fmt.Errorf("%w: %s records decompress to more than %d bytes (64 x max.message.bytes, within 64 MiB..1 GiB)", ErrRecordTooLarge, codec, w.limit)
		case err == io.EOF && what == "":
			return fmt.Errorf("%w: incorrect declared batch size, premature EOF reached after %d of %d records", ErrInvalidRecord, i, count)
		case err == io.EOF:
			err = io.ErrUnexpectedEOF
		case err != nil && err == w.srcErr:
			return fmt.Errorf("%w: %s records do not decompress: record %d of %d: %v", ErrCorruptBatch, codec, i, count, err)
		}
		if err != nil {
			what += ": " + err.Error()
		}
		return fmt.Errorf("%w: record %d of %d at byte %d of the records: %s", ErrCorruptBatch, i, count, w.consumed(), what)
	}
	for i := int32(0); i < count; i++ {
		length, err := w.varint(maxVarintBytes)
		if err != nil {
			if err == io.EOF {
				return info, fail(i, "", err)
			}
			return info, fail(i, "bad length", err)
		}
		if length <= 0 {
			return info, fail(i, fmt.Sprintf("length %d", length), nil)
		}
		start := w.consumed()
		end := start + length
		// attributes (unused in v2 records), timestampDelta, offsetDelta.
		if _, err := w.readByte(); err != nil {
			return info, fail(i, "attributes", err)
		}
		tsDelta, err := w.varint(maxVarlongBytes)
		if err != nil {
			return info, fail(i, "timestamp delta", err)
		}
		offDelta, err := w.varint(maxVarintBytes)
		if err != nil {
			return info, fail(i, "offset delta", err)
		}
		keyLen, err := w.field(end, false)
		if err != nil {
			return info, fail(i, "key", err)
		}
		if keyLen < 0 && compacted {
			keyErrs = addKeyError(keyErrs, i, rules.TopicPartition)
		}
		if _, err := w.field(end, false); err != nil {
			return info, fail(i, "value", err)
		}
		headers, err := w.varint(maxVarintBytes)
		if err != nil || headers < 0 || headers > end-w.consumed() {
			return info, fail(i, fmt.Sprintf("header count %d", headers), err)
		}
		for h := int64(0); h < headers; h++ {
			if _, err := w.field(end, true); err != nil {
				return info, fail(i, fmt.Sprintf("header %d key", h), err)
			}
			if _, err := w.field(end, false); err != nil {
				return info, fail(i, fmt.Sprintf("header %d value", h), err)
			}
		}
		if got := w.consumed(); got != end {
			return info, fail(i, fmt.Sprintf("record length %d but its fields end at %d", length, got-start), nil)
		}
		// Rules are checked once the framing held, so bytes that are not
		// records at all are reported as corrupt.
		switch mode {
		case fromClient:
			if offDelta != int64(i) {
				return info, fmt.Errorf("%w: record %d has offset delta %d", ErrInvalidRecord, i, offDelta)
			}
		case fromLog:
			if offDelta <= prevDelta || offDelta > int64(lastDelta) {
				return info, fmt.Errorf("%w: record %d has offset delta %d after %d (last %d)", ErrCorruptBatch, i, offDelta, prevDelta, lastDelta)
			}
		}
		prevDelta = offDelta
		ts := baseTs + tsDelta
		if ts > maxTs {
			maxTs, maxDelta = ts, int32(offDelta)
		}
		if ts < minTs {
			minTs = ts
		}
	}
	// The stream must end here: reading on also makes the decoders check
	// their trailers (gzip's CRC, lz4's and zstd's checksums), which a
	// consumer's decoder will check too.
	switch _, err := w.readByte(); {
	case err == nil && mode == fromLog:
		return info, fmt.Errorf("%w: %d bytes after the last of %d records", ErrCorruptBatch, int64(len(b)-BatchHeaderSize)-w.consumed()+1, count)
	case err == nil:
		return info, fmt.Errorf("%w: incorrect declared batch size, records still remaining after %d records", ErrInvalidRecord, count)
	case errors.Is(err, errDecompressTooBig):
		return info, fail(count, "", err)
	case err != io.EOF:
		return info, fmt.Errorf("%w: %s records do not decompress: after the last record: %v", ErrCorruptBatch, codec, err)
	}
	if keyErrs != nil {
		return info, keyErrs
	}
	if count > 0 {
		info.MaxTimestamp, info.MaxTimestampDelta, info.MinTimestamp = maxTs, maxDelta, minTs
	}
	return info, nil
}

const (
	math64Min = -1 << 63
	math64Max = 1<<63 - 1
)

// field reads a length-prefixed key, value or header field ending no later
// than end and skips its bytes; -1 is null, refused for a header key.
func (w *recordWalk) field(end int64, headerKey bool) (int64, error) {
	l, err := w.varint(maxVarintBytes)
	if err != nil {
		return 0, err
	}
	if l < -1 || headerKey && l < 0 || l > end-w.consumed() {
		return l, fmt.Errorf("length %d", l)
	}
	if l > 0 {
		return l, w.skip(l)
	}
	return l, nil
}

func addKeyError(e *RecordErrors, i int32, tp TopicPartition) *RecordErrors {
	if e == nil {
		e = new(RecordErrors)
	}
	e.Total++
	if len(e.Errors) < maxListedRecordErrors {
		e.Errors = append(e.Errors, RecordError{BatchIndex: i,
			Message: "Compacted topic cannot accept message without key in topic partition " + tp.String()})
	}
	return e
}

// snappyReader decodes Kafka's snappy records as a stream of blocks: one
// raw block (librdkafka, franz-go) or snappy-java's xerial chunks (the
// Java client). Blocks are decoded strictly, as the Java and C snappy
// decoders do, so a block only s2's extensions make sense of is refused
// here rather than by a consumer; each block's declared size is checked
// against what is left of the limit before anything is allocated.
type snappyReader struct {
	src     []byte
	xerial  bool
	left    int64 // of the decompression limit
	out     []byte
	outPos  int
	scratch []byte // pooled with the walk; grows to the largest block
}

func (s *snappyReader) reset(src []byte, limit int64) {
	s.src, s.left, s.out, s.outPos = src, limit, nil, 0
	s.xerial = bytes.HasPrefix(src, xerialMagic)
	if s.xerial {
		if len(src) < xerialHeaderSize {
			s.src = nil
			s.out = nil
			s.xerial = false
			s.left = -1 // reported by Read
			return
		}
		s.src = src[xerialHeaderSize:]
	}
	if len(s.scratch) > 8<<20 {
		s.scratch = nil // keep pooled memory modest
	}
}

func (s *snappyReader) Read(p []byte) (int, error) {
	for s.outPos == len(s.out) {
		if s.left < 0 {
			return 0, errors.New("truncated xerial header")
		}
		if len(s.src) == 0 {
			return 0, io.EOF
		}
		block := s.src
		if s.xerial {
			if len(s.src) < 4 {
				return 0, errors.New("truncated xerial chunk length")
			}
			size := binary.BigEndian.Uint32(s.src)
			if uint64(size) > uint64(len(s.src)-4) {
				return 0, fmt.Errorf("xerial chunk of %d bytes but %d left", size, len(s.src)-4)
			}
			block, s.src = s.src[4:4+size], s.src[4+size:]
		} else {
			s.src = nil
		}
		n, err := snappy.DecodedLen(block)
		if err != nil {
			return 0, err
		}
		if int64(n) > s.left {
			// Past the limit: let the walk see one byte more than it
			// allows, so it reports the limit rather than corruption.
			return 0, errDecompressTooBig
		}
		s.left -= int64(n)
		if cap(s.scratch) < n {
			s.scratch = make([]byte, n)
		}
		if s.out, err = snappy.DecodeStrict(s.scratch[:n], block); err != nil {
			return 0, err
		}
		s.outPos = 0
	}
	n := copy(p, s.out[s.outPos:])
	s.outPos += n
	return n, nil
}
