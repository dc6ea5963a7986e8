package e2e

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Random and mutated frames, seeded from valid kmsg-encoded requests of
// every API key at random versions, against a real node's client port.
// The node may answer or close each connection but must not die, must not
// panic (not even one recovered per connection), must still answer
// ApiVersions and Metadata, and must still serve the records written
// before. Bounded by frame count and wall time; RAFTKA_FUZZ_SEED replays
// a run.
func TestWireFuzz(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	const (
		maxFrames = 2000
		budget    = 20 * time.Second
		workers   = 4
	)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("RAFTKA_FUZZ_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("RAFTKA_FUZZ_SEED: %v", err)
		}
	}
	t.Logf("seed %d (RAFTKA_FUZZ_SEED=%d replays this run)", seed, seed)

	c := cluster.Start(t, cluster.Nodes(1), cluster.LogLevel("info"))
	n := c.Node(1)
	ctx := ctxFor(t, 120*time.Second)
	adm := kadm.NewClient(client(t, c))
	const topic = "fuzz-intact"
	if err := createTopic(ctx, adm, topic, 2, 1); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	if err := createTopic(ctx, adm, "fz", 1, 1); err != nil { // the seeds' target
		t.Fatalf("create fz: %v", err)
	}
	recs := makeRecords("fuzz", 300)
	produceKgo(t, ctx, kgoWith(t, c, kgo.DefaultProduceTopic(topic)), topic, recs, true)

	keys, err := cluster.ApiVersions(ctx, n.ClientAddr())
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	advertised := make(map[int16][2]int16)
	for _, k := range keys {
		advertised[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	seeds := seedFrames(seed, advertised)
	var (
		sent, answered, closed, silent atomic.Int64
		next                           atomic.Int64
		errMu                          sync.Mutex
		protoErrs                      []string
		wg                             sync.WaitGroup
	)
	stop := time.Now().Add(budget)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for time.Now().Before(stop) && next.Add(1) <= maxFrames {
				first, intact := mutate(rng, seeds)
				frames := []frame{first}
				if rng.IntN(4) == 0 { // pipelined: a bad frame among others
					second, _ := mutate(rng, seeds)
					frames = append(frames, second, seeds[rng.IntN(len(seeds))])
				}
				res, err := exchange(n.ClientAddr(), frames)
				// A valid request for an advertised key and version must be
				// answered, not closed (Fetch may legitimately wait).
				if err == nil && intact && len(frames) == 1 && res != outcomeAnswered {
					key := int16(binary.BigEndian.Uint16(first.b[4:6]))
					version := int16(binary.BigEndian.Uint16(first.b[6:8]))
					if r, ok := advertised[key]; ok && key != 1 && version >= r[0] && version <= r[1] {
						err = fmt.Errorf("valid request key %d v%d was not answered (%s)", key, version, res)
					}
				}
				sent.Add(int64(len(frames)))
				switch {
				case err != nil:
					errMu.Lock()
					protoErrs = append(protoErrs, err.Error())
					errMu.Unlock()
				case res == outcomeAnswered:
					answered.Add(1)
				case res == outcomeClosed:
					closed.Add(1)
				default:
					silent.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d frames on %d connections: %d fully answered, %d closed by the node, %d neither within the read window",
		sent.Load(), answered.Load()+closed.Load()+silent.Load(), answered.Load(), closed.Load(), silent.Load())
	for i, e := range protoErrs {
		if i == 10 {
			t.Errorf("... and %d more", len(protoErrs)-10)
			break
		}
		t.Errorf("malformed answer: %s", e)
	}
	if answered.Load() == 0 {
		t.Errorf("no connection got all its answers: the valid seed frames were never answered")
	}

	if !n.Running() {
		t.Fatalf("the node died under fuzzing (seed %d)", seed)
	}
	if logs := n.Logs(); strings.Contains(logs, "panic") {
		var lines []string
		for _, l := range strings.Split(logs, "\n") {
			if strings.Contains(l, "panic") {
				lines = append(lines, l)
			}
		}
		t.Errorf("the node logged %d panic line(s) under fuzzing (seed %d); first: %.2000s", len(lines), seed, lines[0])
	}
	if _, err := cluster.ApiVersions(ctx, n.ClientAddr()); err != nil {
		t.Fatalf("ApiVersions after fuzzing: %v", err)
	}
	md, err := nodeMetadata(ctx, n)
	if err != nil {
		t.Fatalf("Metadata after fuzzing: %v", err)
	}
	found := false
	for _, tp := range md.Topics {
		found = found || (tp.Topic != nil && *tp.Topic == topic && tp.ErrorCode == 0)
	}
	if !found {
		t.Fatalf("Metadata after fuzzing does not list %s", topic)
	}
	got := consumeKgo(t, ctx, c, topic, endOffsets(recs))
	checkRoundTrip(t, recs, got, 2)

	t.Run("corrupt-compressed", func(t *testing.T) { fuzzCompressedBatches(t, c, seed) })
}

// fuzzCompressedBatches produces compressed batches whose header and CRC
// are valid but whose compressed records were mutated after compression
// (flipped bits, overwritten runs, truncation, garbage appended or
// prepended, a record count off by one, one codec's bytes labelled as
// another's, compressed bytes that are not records), some left intact, at
// acks=1 and acks=all on long-lived connections. No batch a consumer could
// not decode may be acknowledged (each acknowledged one is decoded
// independently), every refusal carries a produce error code, the
// connections stay usable, and every partition touched reads to its end
// with franz-go.
func fuzzCompressedBatches(t *testing.T, c *cluster.Cluster, seed uint64) {
	const (
		maxBatches = 3000
		budget     = 15 * time.Second
		workers    = 2
		topic      = "fuzz-compressed"
		partitions = 3
	)
	ctx := ctxFor(t, 120*time.Second)
	adm := kadm.NewClient(client(t, c))
	if err := createTopic(ctx, adm, topic, partitions, 1); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	refusals := map[int16]bool{kerr.CorruptMessage.Code: true, kerr.InvalidRecord.Code: true, kerr.MessageTooLarge.Code: true}
	var (
		next           atomic.Int64
		acked, refused atomic.Int64
		ackedRecs      atomic.Int64
		errMu          sync.Mutex
		errs           []string
		wg             sync.WaitGroup
	)
	fail := func(format string, args ...any) {
		errMu.Lock()
		errs = append(errs, fmt.Sprintf(format, args...))
		errMu.Unlock()
	}
	stop := time.Now().Add(budget)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(1000+w)))
			conn, err := net.DialTimeout("tcp", c.Node(1).ClientAddr(), 5*time.Second)
			if err != nil {
				fail("dial: %v", err)
				return
			}
			defer conn.Close()
			for corr := int32(1); time.Now().Before(stop) && next.Add(1) <= maxBatches; corr++ {
				codec := int16(1 + rng.IntN(4))
				n := int32(1 + rng.IntN(20))
				payload, count, kind := mutateCompressed(rng, t, codec, n)
				batch := compressedBatch(codec, count, payload)
				acks := []int16{1, -1}[rng.IntN(2)]
				part := int32(rng.IntN(partitions))
				got, err := produceExchange(conn, corr, topic, part, acks, batch)
				if err != nil {
					fail("%s batch (codec %d): %v", kind, codec, err)
					return
				}
				switch {
				case got.ErrorCode == 0:
					acked.Add(1)
					// A consumer's decoder must make exactly count
					// records of it.
					seen, err := decodeIndependently(batch)
					if err != nil || seen != count {
						fail("%s batch (codec %d) acknowledged at %d/%d but it does not decode: %d of %d records, %v", kind, codec, part, got.BaseOffset, seen, count, err)
					}
					ackedRecs.Add(int64(count))
				case refusals[got.ErrorCode]:
					refused.Add(1)
					if kind == "intact" {
						fail("intact batch (codec %d) refused: %d %v", codec, got.ErrorCode, got.ErrorMessage)
					}
				default:
					fail("%s batch (codec %d) answered %d %v", kind, codec, got.ErrorCode, got.ErrorMessage)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d compressed batches acknowledged (%d records), %d refused", acked.Load(), ackedRecs.Load(), refused.Load())
	for i, e := range errs {
		if i == 10 {
			t.Errorf("... and %d more", len(errs)-10)
			break
		}
		t.Error(e)
	}
	if acked.Load() == 0 || refused.Load() == 0 {
		t.Errorf("the mix was not mixed: %d acknowledged, %d refused", acked.Load(), refused.Load())
	}
	ends := listEnds(t, ctx, adm, topic)
	var total int64
	for _, e := range ends {
		total += e
	}
	if total != ackedRecs.Load() {
		t.Errorf("partitions hold %d records, %d were acknowledged", total, ackedRecs.Load())
	}
	if got := consumeKgo(t, ctx, c, topic, ends); int64(len(got)) != total {
		t.Errorf("franz-go read %d records of %d", len(got), total)
	}
}

// decodeIndependently reads a batch as a consumer would, with the codec
// libraries and kmsg rather than raftka's code: decompress the records
// (bounded), then parse them one by one. It returns how many records it
// read, or why it could not read them all.
func decodeIndependently(batch []byte) (int32, error) {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(batch); err != nil {
		return 0, err
	}
	const bound = 64 << 20
	data := rb.Records
	var err error
	switch rb.Attributes & 7 {
	case attrGzip:
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bytes.NewReader(data)); err == nil {
			data, err = io.ReadAll(io.LimitReader(zr, bound))
		}
	case attrSnappy:
		data, err = xerial.Decode(data)
	case attrLZ4:
		data, err = io.ReadAll(io.LimitReader(lz4.NewReader(bytes.NewReader(data)), bound))
	case attrZstd:
		var d *zstd.Decoder
		if d, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(bound)); err == nil {
			data, err = d.DecodeAll(data, nil)
			d.Close()
		}
	}
	if err != nil {
		return 0, fmt.Errorf("decompress: %w", err)
	}
	var n int32
	for len(data) > 0 {
		l, k := binary.Varint(data)
		if k <= 0 || l <= 0 || l > int64(len(data)-k) {
			return n, fmt.Errorf("record %d: bad length", n)
		}
		var r kmsg.Record
		if err := r.ReadFrom(data[:k+int(l)]); err != nil {
			return n, fmt.Errorf("record %d: %w", n, err)
		}
		if r.OffsetDelta != n {
			return n, fmt.Errorf("record %d: offset delta %d", n, r.OffsetDelta)
		}
		data = data[k+int(l):]
		n++
	}
	return n, nil
}

// mutateCompressed returns n records compressed with codec, then damaged
// in one of several ways, with the record count the batch header will
// claim and the name of the damage.
func mutateCompressed(rng *rand.Rand, t *testing.T, codec int16, n int32) (payload []byte, count int32, kind string) {
	recs := encodeRecords(int(n), false)
	comp := compressWith(t, codec, recs)
	count = n
	switch rng.IntN(10) {
	case 0:
		kind = "bit-flipped"
		for range 1 + rng.IntN(4) {
			comp[rng.IntN(len(comp))] ^= 1 << rng.IntN(8)
		}
	case 1:
		kind = "overwritten"
		i := rng.IntN(len(comp))
		for j := i; j < min(len(comp), i+1+rng.IntN(16)); j++ {
			comp[j] = byte(rng.Uint32())
		}
	case 2:
		kind = "truncated"
		comp = comp[:rng.IntN(len(comp))]
	case 3:
		kind = "garbage-appended"
		for range 1 + rng.IntN(32) {
			comp = append(comp, byte(rng.Uint32()))
		}
	case 4:
		kind = "garbage-prepended"
		comp = append([]byte{byte(rng.Uint32()), byte(rng.Uint32())}, comp...)
	case 5:
		kind = "count-off-by-one"
		count = n + []int32{-1, 1}[rng.IntN(2)]
		if count == 0 {
			count = 2
		}
	case 6:
		kind = "codec-mislabelled"
		comp = compressWith(t, 1+(codec%4), recs)
	case 7:
		kind = "not-records"
		noise := make([]byte, 1+rng.IntN(200))
		for i := range noise {
			noise[i] = byte(rng.Uint32())
		}
		comp = compressWith(t, codec, noise)
	default:
		kind = "intact"
	}
	return comp, count, kind
}

// frame is one request as sent: the 4-byte size, then the body.
type frame struct {
	b        []byte
	complete bool // the size prefix matches the bytes that follow
}

type outcome int

func (o outcome) String() string {
	return [...]string{"no answer within the read window", "answered", "closed"}[o]
}

const (
	outcomeSilent outcome = iota
	outcomeAnswered
	outcomeClosed
)

// exchange writes frames on a fresh connection, half-closes it, and reads
// answers until every complete frame has one, the node closes, or the read
// window ends. An answer must be a well-formed frame; one that is not is
// an error.
func exchange(addr string, frames []frame) (outcome, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return outcomeSilent, fmt.Errorf("dial: %v", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
	want := 0
	var out []byte
	for _, f := range frames {
		out = append(out, f.b...)
		if !f.complete {
			break // the node reads the rest of the stream as this frame
		}
		want++
	}
	if _, err := conn.Write(out); err != nil {
		return outcomeClosed, nil // closed while we wrote: an allowed answer
	}
	_ = conn.(*net.TCPConn).CloseWrite()
	for got := 0; ; got++ {
		if got == want && want > 0 {
			return outcomeAnswered, nil
		}
		var size [4]byte
		if _, err := io.ReadFull(conn, size[:]); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return outcomeSilent, nil
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return outcomeSilent, fmt.Errorf("answer %d: connection closed inside a size prefix", got)
			}
			return outcomeClosed, nil
		}
		n := int32(binary.BigEndian.Uint32(size[:]))
		if n < 4 || n > 64<<20 {
			return outcomeSilent, fmt.Errorf("answer %d: frame size %d", got, n)
		}
		if _, err := io.ReadFull(conn, make([]byte, n)); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return outcomeSilent, nil
			}
			return outcomeSilent, fmt.Errorf("answer %d: connection closed inside a %d-byte frame", got, n)
		}
	}
}

// seedFrames encodes a request for every key kmsg knows, at a random
// version of each (within the advertised range for advertised keys, three
// times over, so most fuzzing lands in decoders that exist), plus
// filled-in requests for the common APIs (a real record batch in Produce,
// topics in Fetch, Metadata, ListOffsets...). Every topic named is "fz",
// so no mutation reaches the data under test.
func seedFrames(seed uint64, advertised map[int16][2]int16) []frame {
	rng := rand.New(rand.NewPCG(seed, 1<<32))
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raftka-fuzz"))
	var out []frame
	add := func(req kmsg.Request, version int16) {
		req.SetVersion(version)
		out = append(out, frame{b: f.AppendRequest(nil, req, rng.Int32()), complete: true})
	}
	for key := int16(0); key <= 100; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil {
			continue
		}
		if pr, ok := req.(*kmsg.ProduceRequest); ok {
			pr.Acks = 1 // acks=0 is answered by silence
		}
		r, ok := advertised[key]
		if !ok {
			add(req, int16(rng.IntN(int(req.MaxVersion())+1)))
			continue
		}
		hi := min(r[1], req.MaxVersion())
		for range 3 {
			add(req, r[0]+int16(rng.IntN(int(hi-r[0])+1)))
		}
	}

	fz := "fz"
	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = "raftka-fuzz", "1.0"
	add(av, 3)

	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = &fz
	md.Topics = append(md.Topics, mt)
	for _, v := range []int16{1, 9, 12} {
		add(md, v)
	}

	pr := kmsg.NewPtrProduceRequest()
	pr.Acks, pr.TimeoutMillis = 1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = fz
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = recordBatch(3)
	pt.Partitions = append(pt.Partitions, pp)
	pr.Topics = append(pr.Topics, pt)
	for _, v := range []int16{3, 7, 9} {
		add(pr, v)
	}

	fr := kmsg.NewPtrFetchRequest()
	fr.ReplicaID, fr.MaxWaitMillis, fr.MinBytes, fr.MaxBytes = -1, 100, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = fz
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = 1<<20, -1, -1
	ft.Partitions = append(ft.Partitions, fp)
	fr.Topics = append(fr.Topics, ft)
	for _, v := range []int16{4, 11, 12} {
		add(fr, v)
	}

	lo := kmsg.NewPtrListOffsetsRequest()
	lo.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = fz
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp, lp.CurrentLeaderEpoch = -1, -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	add(lo, 1)
	add(lo, 7)

	ct := kmsg.NewPtrCreateTopicsRequest()
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "fz-new", 1, 1
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "retention.ms", kmsg.StringPtr("60000")
	ctt.Configs = append(ctt.Configs, cfg)
	ct.Topics = append(ct.Topics, ctt)
	ct.TimeoutMillis, ct.ValidateOnly = 5000, true
	add(ct, 5)

	dc := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeTopic, fz
	dc.Resources = append(dc.Resources, dr)
	add(dc, 4)

	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionTimeoutMillis, ip.ProducerID, ip.ProducerEpoch = 60000, -1, -1
	add(ip, 4)

	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.ProtocolType, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = "fz-group", "consumer", 6000, 6000
	jp := kmsg.NewJoinGroupRequestProtocol()
	jp.Name, jp.Metadata = "range", []byte{0, 1, 0, 0, 0, 1, 0, 2, 'f', 'z', 0, 0, 0, 0}
	jg.Protocols = append(jg.Protocols, jp)
	add(jg, 5)
	return out
}

// recordBatch is a valid uncompressed v2 batch of n small records.
func recordBatch(n int) []byte {
	var recs []byte
	for i := range n {
		r := kmsg.Record{OffsetDelta: int32(i), Key: []byte("k" + strconv.Itoa(i)), Value: []byte("fuzz seed value"),
			Headers: []kmsg.Header{{Key: "h", Value: []byte("v")}}}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // everything after the 1-byte zero varint
		recs = r.AppendTo(recs)
	}
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(n - 1),
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(n), Records: recs,
	}
	b.Length = int32(49 + len(recs))
	enc := b.AppendTo(nil)
	binary.BigEndian.PutUint32(enc[17:21], crc32.Checksum(enc[21:], crc32.MakeTable(crc32.Castagnoli)))
	return enc
}

// mutate returns a seed frame damaged in one of several ways: flipped
// bits, overwritten runs, truncation (with and without fixing the size),
// appended garbage, a lying size prefix, a random key or version, two
// seeds spliced, pure noise, or nothing at all.
func mutate(rng *rand.Rand, seeds []frame) (f frame, intact bool) {
	src := seeds[rng.IntN(len(seeds))].b
	body := append([]byte(nil), src[4:]...)
	withSize := func(body []byte) (frame, bool) {
		b := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
		return frame{b: append(b, body...), complete: true}, intact
	}
	switch rng.IntN(11) {
	case 0: // bit flips
		for range 1 + rng.IntN(8) {
			i := rng.IntN(len(body))
			body[i] ^= 1 << rng.IntN(8)
		}
	case 1: // an overwritten run
		i := rng.IntN(len(body))
		for j := i; j < min(len(body), i+1+rng.IntN(16)); j++ {
			body[j] = byte(rng.Uint32())
		}
	case 2: // truncated, size fixed
		body = body[:rng.IntN(len(body)+1)]
	case 3: // truncated, size still claims the whole frame
		b := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
		return frame{b: append(b, body[:rng.IntN(len(body))]...)}, false
	case 4: // trailing garbage
		for range 1 + rng.IntN(64) {
			body = append(body, byte(rng.Uint32()))
		}
	case 5: // a lying size prefix
		sizes := []int32{-1, -1 << 31, 0, 1, 2, 3, int32(len(body)) + 1 + rng.Int32N(1000), 200 << 20, 1<<31 - 1}
		b := binary.BigEndian.AppendUint32(nil, uint32(sizes[rng.IntN(len(sizes))]))
		return frame{b: append(b, body...)}, false
	case 6: // random api key and version
		if len(body) >= 4 {
			binary.BigEndian.PutUint16(body[0:2], uint16(rng.IntN(120)-10))
			binary.BigEndian.PutUint16(body[2:4], uint16(rng.IntN(40)-2))
		}
	case 7: // the header of one seed on the body of another
		other := seeds[rng.IntN(len(seeds))].b[4:]
		cut := min(len(body), 8+rng.IntN(16))
		body = append(body[:cut:cut], other[min(len(other), cut):]...)
	case 8: // noise behind a valid-looking key and version
		noise := make([]byte, rng.IntN(256))
		for i := range noise {
			noise[i] = byte(rng.Uint32())
		}
		body = append(body[:min(len(body), 8):min(len(body), 8)], noise...)
	case 9: // lengths inside the body pushed to extremes
		for range 1 + rng.IntN(3) {
			if len(body) < 12 {
				break
			}
			i := 8 + rng.IntN(len(body)-11)
			ext := [][]byte{{0xff, 0xff}, {0x7f, 0xff}, {0x80, 0x00}, {0xff, 0xff, 0xff, 0xff}, {0x7f, 0xff, 0xff, 0xff}}
			e := ext[rng.IntN(len(ext))]
			copy(body[i:], e)
		}
	default: // unchanged: the node must answer it
		intact = true
	}
	return withSize(body)
}
