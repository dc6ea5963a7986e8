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

// A held publisher serves what its holder served, not the FSM's newest:
// Current and WaitForIndex follow Serve, Latest the FSM, and an older Serve
// never moves the served image back.
func TestPublisherHold(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := newPublisher()
	publishN(p, 1, 1)
	if _, idx := p.Current(); idx != 1 {
		t.Fatalf("unheld: served %d, want 1", idx)
	}
	p.Hold()
	publishN(p, 2, 3)
	if _, idx := p.Current(); idx != 1 {
		t.Fatalf("held: served %d, want 1 until Serve", idx)
	}
	if _, idx := p.Latest(); idx != 3 {
		t.Fatalf("held: latest %d, want 3", idx)
	}
	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancelShort()
	if err := p.WaitForIndex(short, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitForIndex(2) before Serve: %v, want deadline exceeded", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- p.WaitForIndex(ctx, 3) }()
	img := metadata.NewImage()
	p.Serve(img, 3)
	if err := <-waited; err != nil {
		t.Fatalf("WaitForIndex(3) after Serve(3): %v", err)
	}
	if got, idx := p.Current(); got != img || idx != 3 {
		t.Fatalf("served %p@%d, want %p@3", got, idx, img)
	}
	p.Serve(metadata.NewImage(), 2)
	if got, idx := p.Current(); got != img || idx != 3 {
		t.Fatalf("an older Serve moved the served image to %d", idx)
	}
}
