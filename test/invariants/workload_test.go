package invariants

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", timeout, why)
		}
		<-tick.C
	}
}

// Against franz-go's in-process fake broker, which loses nothing, the
// workload, the readers and the checker agree: every acknowledged record
// is read once, in order, and a live consumer sees what the final read sees.
func TestWorkloadAgainstKfake(t *testing.T) {
	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "w"))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	seeds := fake.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cons, err := StartConsumer(seeds, "w")
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var rec Recorder
	const n = 150
	var prods []*Producer
	for i := range 2 {
		p, err := StartProducer(ProducerConfig{Seeds: seeds, Topic: "w", Partitions: 3, Name: fmt.Sprintf("p%d", i), Rate: 1000, MaxRecords: n, ValueSize: 100}, &rec)
		if err != nil {
			t.Fatal(err)
		}
		prods = append(prods, p)
	}
	waitFor(t, 20*time.Second, func() (bool, string) {
		return rec.Count() == 2*n, fmt.Sprintf("%d of %d acknowledged", rec.Count(), 2*n)
	})
	for _, p := range prods {
		sent, err := p.Stop(10 * time.Second)
		if err != nil || sent != n {
			t.Fatalf("Stop: sent %d, %v; want %d, nil", sent, err, n)
		}
	}
	if failed, err := rec.Failed(); failed != 0 {
		t.Fatalf("%d produces failed, last %v", failed, err)
	}
	if got := rec.CountSince(-1, time.Time{}); got != 2*n {
		t.Errorf("CountSince(all) = %d, want %d", got, 2*n)
	}
	if got := rec.CountSince(1, time.Time{}); got != 2*n/3 {
		t.Errorf("CountSince(partition 1) = %d, want %d", got, 2*n/3)
	}

	start, end, err := EndOffsets(ctx, seeds, "w")
	if err != nil {
		t.Fatal(err)
	}
	if len(start) != 3 || end[0]+end[1]+end[2] != 2*n {
		t.Fatalf("start %v end %v, want 3 partitions holding %d", start, end, 2*n)
	}
	read, err := ReadAll(ctx, seeds, "w")
	if err != nil {
		t.Fatal(err)
	}
	r := Check(rec.Acks(), read)
	if !r.OK() || r.Acknowledged != 2*n || r.Read != 2*n || r.Unacknowledged != 0 {
		t.Fatalf("check: %v", r)
	}
	t.Log(r)

	waitFor(t, 20*time.Second, func() (bool, string) { return cons.Reached(end) })
	if lr := Check(rec.Acks(), cons.Records()); !lr.OK() || lr.Lost != 0 {
		t.Fatalf("live consumer: %v", lr)
	}
	if gone := Vanished(cons.Records(), read); len(gone) != 0 {
		t.Fatalf("vanished: %v", gone)
	}

	// The checker is not blind: dropping a record from the read is a loss.
	if r := Check(rec.Acks(), read[1:]); r.Lost != 1 {
		t.Fatalf("one record dropped: %v", r)
	}
}

func TestStartProducerRejectsNoPartitions(t *testing.T) {
	if _, err := StartProducer(ProducerConfig{Seeds: []string{"127.0.0.1:1"}, Topic: "w", Name: "p"}, &Recorder{}); err == nil {
		t.Fatal("want an error for zero partitions")
	}
}
