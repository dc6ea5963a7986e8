package storage

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkCleaner measures the cleaner's throughput in MB/s of dirty log
// cleaned: 32 MiB of batches of ten keyed 100-byte records (compressible about 2x) over 10,000
// keys (each key updated about 30 times), segments of 4 MiB, uncompressed
// and zstd. Each iteration cleans a freshly written log; fsync is off.
func BenchmarkCleaner(b *testing.B) {
	for _, codec := range []Compression{CompressionNone, CompressionZstd} {
		b.Run(codec.String(), func(b *testing.B) {
			noFsync(b)
			cfg := DefaultConfig()
			cfg.CleanupPolicy = PolicyCompact
			cfg.SegmentBytes = 4 << 20
			cfg.MinCleanableDirtyRatio = 0
			rng := rand.New(rand.NewPCG(1, 2))
			var batches [][]byte
			for i := 0; i < 1000; i++ {
				recs := make([]kv, 10)
				for k := range recs {
					// Letters from a small alphabet: compressible about 2x,
					// like text.
					v := make([]byte, 100)
					for j := range v {
						v[j] = 'a' + byte(rng.IntN(16))
					}
					recs[k] = kv{key: fmt.Sprintf("key-%05d", (i*10+k*7919)%10_000), value: string(v)}
				}
				batches = append(batches, keyedBatch(b, 1700000000000, codec, -1, 0, recs...))
			}
			const target = 32 << 20
			var dirty int64
			for b.Loop() {
				b.StopTimer()
				l, _, err := OpenLog(filepath.Join(b.TempDir(), "bench-0"), cfg, LogOptions{})
				if err != nil {
					b.Fatal(err)
				}
				for i := 0; l.Size() < target; i++ {
					if _, err := l.Append(append([]byte(nil), batches[i%len(batches)]...), AppendOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				l.Roll()
				l.SetHighWatermark(l.LogEndOffset())
				b.StartTimer()
				st, did, err := l.Clean(time.UnixMilli(1700000000000), CleanOptions{})
				if err != nil || !did {
					b.Fatal(did, err)
				}
				b.StopTimer()
				dirty = st.DirtyBytes
				b.SetBytes(dirty)
				l.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(dirty)/(1<<20), "dirtyMiB")
		})
	}
}

// BenchmarkAppendWhileCleaning measures Log.Append throughput (MB/s) on a
// compacted log with a cleaner goroutine cleaning the same log in a loop,
// against the same appends with no cleaner: what the cleaner costs the
// producers of the log it cleans (on this machine the two share two
// cores). Batches of ten keyed 100-byte records over 10,000 keys;
// segments of 1 MiB; fsync off.
func BenchmarkAppendWhileCleaning(b *testing.B) {
	for _, cleaning := range []bool{false, true} {
		name := "cleaner-off"
		if cleaning {
			name = "cleaner-on"
		}
		b.Run(name, func(b *testing.B) {
			noFsync(b)
			cfg := DefaultConfig()
			cfg.CleanupPolicy = PolicyCompact
			cfg.SegmentBytes = 1 << 20
			cfg.MinCleanableDirtyRatio = 0
			cfg.FileDeleteDelayMs = 0
			l, _, err := OpenLog(filepath.Join(b.TempDir(), "bench-0"), cfg, LogOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			rng := rand.New(rand.NewPCG(3, 4))
			var batches [][]byte
			for i := 0; i < 1000; i++ {
				recs := make([]kv, 10)
				for k := range recs {
					v := make([]byte, 100)
					for j := range v {
						v[j] = 'a' + byte(rng.IntN(16))
					}
					recs[k] = kv{key: fmt.Sprintf("key-%05d", rng.IntN(10_000)), value: string(v)}
				}
				batches = append(batches, keyedBatch(b, 1700000000000, CompressionNone, -1, 0, recs...))
			}
			stop, done := make(chan struct{}), make(chan struct{})
			var cleans int
			go func() {
				defer close(done)
				if !cleaning {
					return
				}
				opts := CleanOptions{offsetMap: newOffsetMap(16 << 20)}
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, did, err := l.Clean(time.UnixMilli(1700000000000), opts); err == nil && did {
						cleans++
					} else {
						time.Sleep(time.Millisecond)
					}
				}
			}()
			buf := make([]byte, 0, 4096)
			b.SetBytes(int64(len(batches[0])))
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				buf = append(buf[:0], batches[i%len(batches)]...)
				if _, err := l.Append(buf, AppendOptions{}); err != nil {
					b.Fatal(err)
				}
				l.SetHighWatermark(l.LogEndOffset())
			}
			b.StopTimer()
			close(stop)
			<-done
			b.ReportMetric(float64(cleans), "cleans")
		})
	}
}
