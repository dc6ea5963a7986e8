package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// connections.max.idle.ms: an idle connection is closed; one that keeps
// talking, or waits for an answer, is not.
func TestIdleConnectionsClosed(t *testing.T) {
	const idle = 300 * time.Millisecond
	release := make(chan struct{})
	tb := testTable(t, apiEntry{key: 3, max: 12, handle: func(ctx context.Context, _ *request, kreq kmsg.Request) (kmsg.Response, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return kreq.(*kmsg.MetadataRequest).ResponseKind(), nil
	}})
	_, addr := startServer(t, tb, Options{ConnectionsMaxIdle: idle})

	// Idle after one answer: closed.
	quiet := dialRaw(t, addr)
	quiet.send(kmsg.NewPtrApiVersionsRequest(), 1)
	quiet.readResponse(kmsg.NewPtrApiVersionsResponse())
	quiet.expectClosed()

	// Busy for several idle periods: open throughout.
	busy := dialRaw(t, addr)
	for i := range int32(10) {
		busy.send(kmsg.NewPtrApiVersionsRequest(), i)
		busy.readResponse(kmsg.NewPtrApiVersionsResponse())
		time.Sleep(idle / 4)
	}

	// Waiting on an answer longer than the limit: not idle.
	waiting := dialRaw(t, addr)
	waiting.send(kmsg.NewPtrMetadataRequest(), 7)
	time.Sleep(3 * idle)
	close(release)
	if corr := waiting.readResponse(kmsg.NewPtrMetadataResponse()); corr != 7 {
		t.Fatalf("correlation %d", corr)
	}
	waiting.expectClosed() // and idle again afterwards
}

// Without a limit nothing is closed for being idle.
func TestIdleLimitOff(t *testing.T) {
	_, addr := startServer(t, testTable(t), Options{})
	c := dialRaw(t, addr)
	c.send(kmsg.NewPtrApiVersionsRequest(), 1)
	c.readResponse(kmsg.NewPtrApiVersionsResponse())
	_ = c.c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	var b [1]byte
	if _, err := c.c.Read(b[:]); !isTimeout(err) {
		t.Fatalf("read on an idle connection without a limit: %v, want our own timeout", err)
	}
}
