package storage

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/raftka/raftka/storage/recordbatch"
	"pgregory.net/rapid"
)

// logModel is the in-memory truth the real log is checked against: the
// batches in order, the log start offset and the log end offset.
type logModel struct {
	batches [][]byte // as stored (offsets assigned)
	start   int64
	leo     int64
	// active are the idempotent producers whose every batch is still in
	// the log, so their expected state follows from the batches alone.
	// When the log start moves they are retired (a new id is used from
	// then on): what a log remembers of producers whose batches went
	// depends on which snapshots survived, as in Kafka.
	active  map[int64]bool
	nextPID int64
}

// producer derives a producer's expected state from the model's batches:
// the epoch of its newest batch and the newest MaxProducerBatches batches
// of that epoch's trailing run (a new epoch forgets the older batches).
func (m *logModel) producer(pid int64) (epoch int16, batches []ProducerBatch, known bool) {
	for _, raw := range m.batches {
		b := Batch(raw)
		if b.ProducerID() != pid {
			continue
		}
		if !known || b.ProducerEpoch() != epoch {
			epoch, batches, known = b.ProducerEpoch(), nil, true
		}
		batches = append(batches, ProducerBatch{FirstSeq: b.BaseSequence(), LastSeq: b.BaseSequence() + b.LastOffsetDelta(),
			FirstOffset: b.BaseOffset(), LastOffset: b.LastOffset(), Timestamp: b.MaxTimestamp()})
	}
	if len(batches) > MaxProducerBatches {
		batches = batches[len(batches)-MaxProducerBatches:]
	}
	return epoch, batches, known
}

// retireProducers is called whenever the log start moves.
func (m *logModel) retireProducers() { clear(m.active) }

func (m *logModel) visible() [][]byte {
	var out [][]byte
	for _, b := range m.batches {
		if Batch(b).LastOffset() >= m.start {
			out = append(out, b)
		}
	}
	return out
}

// TestLogModel drives a log with random appends (leader and follower,
// idempotent producers with retries, gaps, epoch bumps and stale epochs),
// truncations, rolls, retention, DeleteRecords, resets, high-watermark
// moves, leaderships taken without an append and reopens (clean and
// unclean), and after every step compares its offsets, its full contents,
// its leader epochs and its producers' state with the model.
func TestLogModel(t *testing.T) {
	noFsync(t)
	rapid.Check(t, func(rt *rapid.T) {
		dir := partDir(t)
		clk := newClock()
		cfg := smallConfig()
		cfg.SegmentBytes = int64(rapid.IntRange(200, 3000).Draw(rt, "segmentBytes"))
		cfg.IndexIntervalBytes = int64(rapid.IntRange(0, 500).Draw(rt, "indexInterval"))
		cfg.SegmentIndexBytes = int64(rapid.IntRange(12, 200).Draw(rt, "indexBytes"))
		// Drop-behind is cache advice only: the model must hold with it
		// on (small steps, so it runs across rolls and truncations).
		dropBehind := int64(rapid.SampledFrom([]int{0, 1, 64, 700}).Draw(rt, "dropBehind"))
		l, _, err := OpenLog(dir, cfg, LogOptions{Now: clk.now, FollowerDropBehind: dropBehind})
		if err != nil {
			rt.Fatal(err)
		}
		defer func() { l.Close() }()
		m := &logModel{active: map[int64]bool{}}
		epoch := int32(0)
		check := func(op string) {
			if l.LogEndOffset() != m.leo || l.LogStartOffset() != m.start {
				rt.Fatalf("after %s: log [%d, %d), model [%d, %d)", op, l.LogStartOffset(), l.LogEndOffset(), m.start, m.leo)
			}
			got := readAll(t, l, m.start)
			want := m.visible()
			if len(got) != len(want) {
				rt.Fatalf("after %s: read %d batches, model has %d", op, len(got), len(want))
			}
			for i := range got {
				if !bytes.Equal(got[i], want[i]) {
					rt.Fatalf("after %s: batch %d differs", op, i)
				}
			}
			if hw := l.HighWatermark(); hw < m.start || hw > m.leo {
				rt.Fatalf("after %s: high watermark %d outside [%d, %d]", op, hw, m.start, m.leo)
			}
			checkEpochs(rt, op, l, m)
			have := map[int64]ProducerState{}
			for _, p := range l.Producers() {
				have[p.ProducerID] = p
			}
			for pid := range m.active {
				epoch, batches, known := m.producer(pid)
				p, ok := have[pid]
				if ok != known || known && (p.Epoch != epoch || !reflect.DeepEqual(p.Batches, batches)) {
					rt.Fatalf("after %s: producer %d is %+v (known %v), model epoch %d batches %+v (known %v)", op, pid, p, ok, epoch, batches, known)
				}
			}
		}
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for step := 0; step < steps; step++ {
			clk.advance(time.Duration(rapid.IntRange(0, 1000).Draw(rt, "ms")) * time.Millisecond)
			switch op := rapid.IntRange(0, 13).Draw(rt, "op"); op {
			case 0, 1, 2: // leader append
				n := rapid.IntRange(1, 8).Draw(rt, "records")
				b := batchOf(clk.now().UnixMilli(), fmt.Sprint(step), n)
				if rapid.Bool().Draw(rt, "newEpoch") {
					epoch++
				}
				res, err := l.Append(b, AppendOptions{LeaderEpoch: epoch})
				if err != nil {
					rt.Fatal(err)
				}
				if res.BaseOffset != m.leo {
					rt.Fatalf("append at %d, model LEO %d", res.BaseOffset, m.leo)
				}
				m.batches = append(m.batches, b)
				m.leo = res.LastOffset + 1
			case 3: // follower append, sometimes with an overlap
				// Gaps are accepted (TestFollowerAcceptsGaps); the model
				// keeps its log dense.
				skew := int64(rapid.IntRange(-1, 0).Draw(rt, "skew"))
				if m.leo == 0 && skew < 0 {
					skew = 0
				}
				n := rapid.IntRange(1, 5).Draw(rt, "records")
				rs := make([]recordbatch.Record, n)
				for i := range rs {
					rs[i] = recordbatch.Record{OffsetDelta: int32(i), Timestamp: clk.now().UnixMilli(), Value: []byte("f")}
				}
				b := recordbatch.Batch{BaseOffset: m.leo + skew, PartitionLeaderEpoch: epoch, BaseTimestamp: clk.now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Records: rs}.Encode()
				_, err := l.AppendAsFollower(b)
				if (err == nil) != (skew == 0) {
					rt.Fatalf("follower append with skew %d: %v", skew, err)
				}
				if err == nil {
					m.batches = append(m.batches, b)
					m.leo = Batch(b).NextOffset()
				}
			case 4: // truncate
				to := rapid.Int64Range(0, m.leo+1).Draw(rt, "to")
				if err := l.Truncate(to); err != nil {
					rt.Fatal(err)
				}
				// Whatever the cut, an epoch starting at the new end holds
				// no record (op 13 makes such epochs) and must go: a
				// follower keeping it names it as LastFetchedEpoch and
				// diverges on every fetch.
				if latest, ok := l.LeaderEpochs().Latest(); ok && latest.StartOffset >= l.LogEndOffset() {
					rt.Fatalf("Truncate(%d) kept epoch %d at %d, log end %d", to, latest.Epoch, latest.StartOffset, l.LogEndOffset())
				}
				if to < m.leo {
					if to < m.start {
						m.batches, m.start, m.leo = nil, to, to
						m.retireProducers()
					} else {
						// Whole batches go: the log ends where the batch
						// holding to began.
						cut := m.leo
						for i, b := range m.batches {
							if Batch(b).LastOffset() >= to {
								cut = Batch(b).BaseOffset()
								m.batches = m.batches[:i]
								break
							}
						}
						if cut < m.start {
							m.batches, m.start, m.leo = nil, to, to
							m.retireProducers()
						} else {
							m.leo = cut
						}
					}
				}
			case 5: // roll
				if err := l.Roll(); err != nil {
					rt.Fatal(err)
				}
			case 6: // high watermark
				hw := rapid.Int64Range(m.start, m.leo).Draw(rt, "hw")
				if got := l.SetHighWatermark(hw); got != hw {
					rt.Fatalf("SetHighWatermark(%d) stored %d", hw, got)
				}
			case 7: // DeleteRecords up to the HW
				if l.HighWatermark() > m.start {
					to := rapid.Int64Range(m.start, l.HighWatermark()).Draw(rt, "deleteTo")
					got, err := l.DeleteRecords(to)
					if err != nil || got != to {
						rt.Fatalf("DeleteRecords(%d) = %d, %v", to, got, err)
					}
					if to > m.start {
						m.retireProducers()
					}
					m.start = to
				}
				if _, err := l.DeleteRecords(l.HighWatermark() + 1); err == nil {
					rt.Fatal("DeleteRecords beyond the high watermark accepted")
				}
			case 8: // retention by bytes (and time)
				c := l.Config()
				c.RetentionBytes = int64(rapid.IntRange(-1, 5000).Draw(rt, "retentionBytes"))
				c.RetentionMs = int64(rapid.IntRange(-1, 20000).Draw(rt, "retentionMs"))
				if err := l.UpdateConfig(c); err != nil {
					rt.Fatal(err)
				}
				res, err := l.ApplyRetention(clk.now())
				if err != nil {
					rt.Fatal(err)
				}
				if res.LogStartOffset < m.start || res.LogStartOffset > l.HighWatermark() {
					rt.Fatalf("retention moved the start to %d (model %d, hw %d)", res.LogStartOffset, m.start, l.HighWatermark())
				}
				if res.LogStartOffset > m.start {
					m.retireProducers()
					m.start = res.LogStartOffset
					for len(m.batches) > 0 && Batch(m.batches[0]).LastOffset() < m.start {
						m.batches = m.batches[1:]
					}
					if len(m.batches) > 0 && Batch(m.batches[0]).BaseOffset() != m.start {
						rt.Fatalf("retention cut inside a batch: start %d", m.start)
					}
				}
			case 9: // reset
				if rapid.IntRange(0, 3).Draw(rt, "resetChance") == 0 {
					to := m.leo + int64(rapid.IntRange(0, 10).Draw(rt, "resetAhead"))
					if err := l.ResetTo(to); err != nil {
						rt.Fatal(err)
					}
					m.batches, m.start, m.leo = nil, to, to
					m.retireProducers()
				}
			case 10: // reopen
				clean := rapid.Bool().Draw(rt, "clean")
				opts := LogOptions{Now: clk.now, CleanShutdown: clean, RecoveryPoint: l.RecoveryPoint(), LogStartOffset: l.LogStartOffset(), HighWatermark: l.HighWatermark(), FollowerDropBehind: dropBehind}
				if err := l.Close(); err != nil {
					rt.Fatal(err)
				}
				var rep *RecoveryReport
				l, rep, err = OpenLog(dir, l.Config(), opts)
				if err != nil {
					rt.Fatal(err)
				}
				if rep.LostData() {
					rt.Fatalf("reopen after Close lost data: %+v", rep)
				}
			case 11, 12: // an idempotent producer sends, retries, skips or fences
				idempotentStep(rt, l, m, clk.now().UnixMilli(), epoch)
			case 13: // leadership at a new epoch, which starts at the end, with no append yet
				epoch++
				if err := l.LeaderEpochs().Assign(epoch, m.leo); err != nil {
					rt.Fatal(err)
				}
			}
			check(fmt.Sprintf("step %d", step))
		}
	})
}

// checkEpochs checks the leader epoch cache against the model's batches:
// epochs and start offsets strictly increase, every start is within the
// log (one at the end is an epoch led with no record yet), and every
// visible batch lies in the epoch it was written in.
func checkEpochs(rt *rapid.T, op string, l *Log, m *logModel) {
	entries := l.LeaderEpochs().Entries()
	for i, e := range entries {
		if e.StartOffset < m.start || e.StartOffset > m.leo {
			rt.Fatalf("after %s: epoch %d starts at %d, outside the log [%d, %d]", op, e.Epoch, e.StartOffset, m.start, m.leo)
		}
		if i > 0 && (e.Epoch <= entries[i-1].Epoch || e.StartOffset <= entries[i-1].StartOffset) {
			rt.Fatalf("after %s: epochs not increasing: %v", op, entries)
		}
	}
	for _, raw := range m.visible() {
		b := Batch(raw)
		at := max(b.BaseOffset(), m.start)
		i := len(entries) - 1
		for i >= 0 && entries[i].StartOffset > at {
			i--
		}
		if i < 0 || entries[i].Epoch != b.PartitionLeaderEpoch() {
			rt.Fatalf("after %s: batch at %d written in epoch %d, epochs %v", op, b.BaseOffset(), b.PartitionLeaderEpoch(), entries)
		}
	}
}

// idempotentStep sends one batch from an idempotent producer (a new one,
// or an active one) and checks the log's answer against the model: the
// next sequence is appended, a retry of one of the last five batches is a
// duplicate with the original offsets, a gap is out of order, a bumped
// epoch restarts at 0 and an older epoch is fenced.
func idempotentStep(rt *rapid.T, l *Log, m *logModel, ts int64, leaderEpoch int32) {
	var pids []int64
	for pid := range m.active {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	var pid int64
	if len(pids) == 0 || rapid.IntRange(0, 4).Draw(rt, "newProducer") == 0 {
		m.nextPID++
		pid = m.nextPID
		m.active[pid] = true
	} else {
		pid = rapid.SampledFrom(pids).Draw(rt, "pid")
	}
	epoch, batches, known := m.producer(pid)
	next := int32(0)
	if known {
		next = batches[len(batches)-1].LastSeq + 1
	}
	n := rapid.IntRange(1, 4).Draw(rt, "idempotentRecords")
	seq, wantErr, dupOf := next, error(nil), -1
	switch kind := rapid.IntRange(0, 4).Draw(rt, "kind"); {
	case kind == 1 && known:
		dupOf = rapid.IntRange(0, len(batches)-1).Draw(rt, "retryOf")
		seq, n = batches[dupOf].FirstSeq, int(batches[dupOf].LastSeq-batches[dupOf].FirstSeq)+1
	case kind == 2 && known:
		seq, wantErr = next+int32(rapid.IntRange(1, 3).Draw(rt, "gap")), ErrOutOfOrderSequence
	case kind == 3 && known:
		epoch, seq = epoch+1, 0
	case kind == 4 && known && epoch > 0:
		epoch, seq, wantErr = epoch-1, rapid.Int32Range(0, 10).Draw(rt, "staleSeq"), ErrInvalidProducerEpoch
	}
	b := idemBatch(pid, epoch, seq, n, ts)
	res, err := l.Append(b, AppendOptions{LeaderEpoch: leaderEpoch})
	switch {
	case wantErr != nil:
		if !errors.Is(err, wantErr) {
			rt.Fatalf("producer %d epoch %d seq %d: %+v, %v; want %v", pid, epoch, seq, res, err, wantErr)
		}
	case dupOf >= 0:
		d := batches[dupOf]
		if err != nil || !res.Duplicate || res.BaseOffset != d.FirstOffset || res.LastOffset != d.LastOffset {
			rt.Fatalf("producer %d retry of %+v: %+v, %v", pid, d, res, err)
		}
	default:
		if err != nil || res.Duplicate || res.BaseOffset != m.leo {
			rt.Fatalf("producer %d epoch %d seq %d: %+v, %v; want an append at %d", pid, epoch, seq, res, err, m.leo)
		}
		m.batches = append(m.batches, b)
		m.leo = res.LastOffset + 1
	}
}
