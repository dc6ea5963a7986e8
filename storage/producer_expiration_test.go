package storage

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// A new producer.id.expiration.ms reaches the logs already open and those
// opened after it.
func TestManagerSetProducerIDExpiration(t *testing.T) {
	m, _, err := OpenManager(ManagerOptions{Dirs: []string{filepath.Join(t.TempDir(), "d")}, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	before, err := m.GetOrCreate("t", 0, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	// A producer last seen at 1000 ms.
	if _, err := before.Append(Batch(idemBatchAt(0, 7, 0, 0, 1, 1000)), AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(1000 + 60_000)
	if n, _ := before.ExpireProducers(at); n != 0 {
		t.Fatalf("expired %d a minute in under the one-day default", n)
	}
	if err := m.SetProducerIDExpiration(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if n, _ := before.ExpireProducers(at); n != 1 {
		t.Fatalf("expired %d under the new 30 s, want the idle producer", n)
	}
	after, err := m.GetOrCreate("t", 1, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := after.Append(Batch(idemBatchAt(0, 8, 0, 0, 1, 1000)), AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if n, _ := after.ExpireProducers(at); n != 1 {
		t.Fatalf("a log opened after the change expired %d, want 1", n)
	}
	if m.ProducerIDExpiration() != 30*time.Second {
		t.Fatalf("ProducerIDExpiration %v", m.ProducerIDExpiration())
	}
	if err := m.SetProducerIDExpiration(0); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("0: %v, want ErrInvalidConfig", err)
	}
}
