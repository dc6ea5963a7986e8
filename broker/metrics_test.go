package broker

import (
	"testing"
	"time"

	"github.com/raftka/raftka/storage/recordbatch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Per-topic traffic counts the batch bytes as sent and the records in their
// headers; a consumer fetch counts the bytes sent; request completions match
// requests received; error codes in responses are counted per request.
func TestTopicTrafficRequestTimesAndErrors(t *testing.T) {
	f := newPartFixture(t)
	id := f.topic("orders", nil, []int32{1})
	f.topic("other", nil, []int32{1})
	c := f.srv.Counters()

	var sent int64
	for i := range 3 {
		b := recordbatch.Build(time.Now().UnixMilli(), keyed(2*i), keyed(2*i+1))
		sent += int64(len(b))
		if got := f.produce(9, -1, "orders", id, map[int32][]byte{0: b})[0]; got.ErrorCode != 0 {
			t.Fatalf("produce: %d", got.ErrorCode)
		}
	}
	if got := c.Topic("orders"); got.BytesIn != sent || got.RecordsIn != 6 || got.BytesOut != 0 {
		t.Fatalf("orders after producing %d bytes in 3 batches of 2: %+v", sent, got)
	}
	if got := c.Topic("other"); got != (TopicCounts{}) {
		t.Fatalf("a topic nobody produced to counts %+v", got)
	}

	p := onlyPartition(t, f.call(fetchReq(12, "orders", id, 0, 0)).(*kmsg.FetchResponse))
	if p.ErrorCode != 0 || int64(len(p.RecordBatches)) != sent {
		t.Fatalf("fetch: error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
	}
	if got := c.Topic("orders").BytesOut; got != sent {
		t.Fatalf("bytes out %d, want %d", got, sent)
	}

	// Two unknown partitions in one request: two error codes.
	if got := f.produce(9, -1, "orders", id, map[int32][]byte{5: recordbatch.Build(0, keyed(0)), 6: recordbatch.Build(0, keyed(0))}); got[5].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("produce to a missing partition: %d", got[5].ErrorCode)
	}
	waitFor(t, "produce completions", func() bool { return c.CompletedFor(0) == c.RequestsFor(0, 9) })
	waitFor(t, "fetch completions", func() bool { return c.CompletedFor(1) == c.RequestsFor(1, 12) })
	if got := c.CompletedFor(0); got != 4 {
		t.Fatalf("%d produce requests completed, want 4", got)
	}
	if got := c.ErrorsFor(0, kerr.UnknownTopicOrPartition.Code); got != 2 {
		t.Fatalf("UNKNOWN_TOPIC_OR_PARTITION counted %d times, want 2", got)
	}
	if got := c.Topic("orders").BytesIn; got != sent {
		t.Fatalf("refused batches moved bytes in: %d, want %d", got, sent)
	}
}

func TestReportErrorCodesWalksNestedResponses(t *testing.T) {
	resp := kmsg.NewPtrDeleteGroupsResponse()
	for _, code := range []int16{0, kerr.GroupIDNotFound.Code, kerr.GroupIDNotFound.Code, kerr.NonEmptyGroup.Code} {
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.ErrorCode = code
		resp.Groups = append(resp.Groups, g)
	}
	top := kmsg.NewPtrListGroupsResponse()
	top.ErrorCode = kerr.CoordinatorNotAvailable.Code
	c := &Counters{}
	reportErrorCodes(c, 42, resp)
	reportErrorCodes(c, 16, top)
	for _, tc := range []struct {
		key, code int16
		want      uint64
	}{
		{42, kerr.GroupIDNotFound.Code, 2}, {42, kerr.NonEmptyGroup.Code, 1}, {42, 0, 0},
		{16, kerr.CoordinatorNotAvailable.Code, 1},
	} {
		if got := c.ErrorsFor(tc.key, tc.code); got != tc.want {
			t.Errorf("key %d code %d: %d, want %d", tc.key, tc.code, got, tc.want)
		}
	}
}

// A fetch that long-polls in the purgatory reports remote time; one
// answered at once, and a produce whose ISR is only the leader, do not.
func TestRequestRemoteTimeIsThePurgatoryWait(t *testing.T) {
	f := newPartFixture(t)
	id := f.topic("poll", nil, []int32{1})
	c := f.srv.Counters()
	if got := f.produce(9, -1, "poll", id, map[int32][]byte{0: recordbatch.Build(time.Now().UnixMilli(), keyed(0))})[0]; got.ErrorCode != 0 {
		t.Fatalf("produce: %d", got.ErrorCode)
	}
	at := fetchReq(12, "poll", id, 0, 0)
	at.MaxWaitMillis, at.MinBytes = 5000, 1
	f.call(at)
	end := fetchReq(12, "poll", id, 0, 1)
	end.MaxWaitMillis, end.MinBytes = 50, 1
	f.call(end)
	waitFor(t, "fetch completions", func() bool { return c.CompletedFor(1) == 2 })
	waitFor(t, "produce completion", func() bool { return c.CompletedFor(0) == 1 })
	if got := c.RemoteFor(1); got != 1 {
		t.Errorf("%d fetches report remote time, want 1 (the one that waited)", got)
	}
	if got := c.RemoteFor(0); got != 0 {
		t.Errorf("%d produces with a leader-only ISR report remote time", got)
	}
}

func TestRequestTimesSplit(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name                                  string
		dequeued, localDone, ready, send, end time.Time
		want                                  RequestTimes
	}{
		{"every phase", at(1), at(3), at(10), at(12), at(15),
			RequestTimes{Queue: ms(1), Local: ms(2), Remote: ms(7), ResponseQueue: ms(2), ResponseSend: ms(3), Total: ms(15)}},
		{"no wait", at(1), time.Time{}, at(4), at(4), at(5),
			RequestTimes{Queue: ms(1), Local: ms(3), ResponseSend: ms(1), Total: ms(5)}},
		{"acks=0: nothing written", at(1), time.Time{}, at(2), time.Time{}, at(6),
			RequestTimes{Queue: ms(1), Local: ms(1), ResponseQueue: ms(4), Total: ms(6)}},
		{"answered on the reader", time.Time{}, time.Time{}, time.Time{}, at(2), at(3),
			RequestTimes{Local: ms(2), ResponseSend: ms(1), Total: ms(3)}},
	} {
		got := requestTimes(&request{received: t0, dequeued: tc.dequeued, localDone: tc.localDone}, tc.ready, tc.send, tc.end)
		if got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
		if sum := got.Queue + got.Local + got.Remote + got.ResponseQueue + got.ResponseSend; sum != got.Total {
			t.Errorf("%s: phases add up to %v, total %v", tc.name, sum, got.Total)
		}
	}
}
