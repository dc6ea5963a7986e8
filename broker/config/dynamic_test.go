package config

import (
	"testing"
	"time"
)

func TestWithDynamic(t *testing.T) {
	cfg, _, err := Parse([]byte(base+"log.cleaner.backoff.ms=1000\nlog.cleaner.threads=2\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"log.cleaner.backoff.ms", "log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.max.bytes.per.second"}
	cases := []struct {
		name            string
		broker, cluster map[string]string
		backoff         time.Duration
		threads         int32
		dedupe          int64
		ioMax           float64
		wantErr         bool
	}{
		{name: "file only", backoff: time.Second, threads: 2, dedupe: 134217728, ioMax: 1.7976931348623157e308},
		{name: "cluster default over the file", cluster: map[string]string{"log.cleaner.backoff.ms": "500", "log.cleaner.io.max.bytes.per.second": "1024.5"},
			backoff: 500 * time.Millisecond, threads: 2, dedupe: 134217728, ioMax: 1024.5},
		{name: "per broker over the cluster default", broker: map[string]string{"log.cleaner.backoff.ms": "250", "log.cleaner.threads": "3"}, cluster: map[string]string{"log.cleaner.backoff.ms": "500", "log.cleaner.dedupe.buffer.size": "1048576"},
			backoff: 250 * time.Millisecond, threads: 3, dedupe: 1048576, ioMax: 1.7976931348623157e308},
		{name: "a bad value keeps the file's", broker: map[string]string{"log.cleaner.threads": "0", "log.cleaner.backoff.ms": "7"},
			backoff: 7 * time.Millisecond, threads: 2, dedupe: 134217728, ioMax: 1.7976931348623157e308, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := cfg.WithDynamic(keys, c.broker, c.cluster)
			if (err != nil) != c.wantErr {
				t.Fatalf("error %v, want error %v", err, c.wantErr)
			}
			if got.LogCleanerBackoff != c.backoff || got.LogCleanerThreads != c.threads || got.LogCleanerDedupeBufferSize != c.dedupe || got.LogCleanerIOMaxBytesPerSecond != c.ioMax {
				t.Fatalf("backoff %v threads %d dedupe %d io %g", got.LogCleanerBackoff, got.LogCleanerThreads, got.LogCleanerDedupeBufferSize, got.LogCleanerIOMaxBytesPerSecond)
			}
		})
	}
	if cfg.LogCleanerBackoff != time.Second {
		t.Fatal("WithDynamic changed the static config")
	}
	if _, err := cfg.WithDynamic([]string{"no.such.key"}, nil, nil); err == nil {
		t.Fatal("an unknown key was accepted")
	}
}
