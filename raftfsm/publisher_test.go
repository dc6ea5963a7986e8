package raftfsm

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
)

func publishN(p *Publisher, from, to uint64) {
	for i := from; i <= to; i++ {
		p.publish(Event{Image: metadata.NewImage(), Delta: &metadata.Delta{}, Index: i})
	}
}

// NextLatest hands over one event as it is, and a queued run as its last
// image marked Reset (the deltas in between cannot be joined).
func TestNextLatest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := newPublisher()
	s := p.Subscribe()
	defer s.Close()

	// The subscription's first event (the current image, a Reset) and two
	// publishes behind it come back as one: the newest, as a Reset.
	publishN(p, 1, 2)
	ev, err := s.NextLatest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Index != 2 || !ev.Reset || ev.Delta != nil {
		t.Fatalf("after a run: index %d reset %v delta %v, want index 2, a Reset without delta", ev.Index, ev.Reset, ev.Delta)
	}

	// One event alone keeps its delta.
	publishN(p, 3, 3)
	ev, err = s.NextLatest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Index != 3 || ev.Reset || ev.Delta == nil {
		t.Fatalf("single event: index %d reset %v delta %v, want index 3 with its delta", ev.Index, ev.Reset, ev.Delta)
	}

	// Nothing queued: it waits, and ends with ctx.
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if _, err := s.NextLatest(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("empty queue: %v, want deadline exceeded", err)
	}

	// A later run is taken whole again, and Next still works after it.
	publishN(p, 4, 7)
	if ev, err = s.NextLatest(ctx); err != nil || ev.Index != 7 || !ev.Reset {
		t.Fatalf("second run: index %d reset %v err %v", ev.Index, ev.Reset, err)
	}
	publishN(p, 8, 8)
	if ev, err = s.Next(ctx); err != nil || ev.Index != 8 {
		t.Fatalf("Next after NextLatest: index %d err %v", ev.Index, err)
	}

	// Closed: the error once the queue is empty.
	p.close()
	if _, err := s.NextLatest(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v, want ErrClosed", err)
	}
}
