package broker

import (
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// completed records the end of a slot's request; see requestDone.
// sendStart is when the writer began writing its response (zero when there
// is none to write).
func (c *conn) completed(s *slot, sendStart time.Time) {
	c.requestDone(s.rc.key, requestTimes(s.rc, s.completedAt, sendStart, time.Now()), s.resp)
}

// requestTimes splits a request's life at Kafka's RequestChannel
// boundaries: receipt, handler start (dequeued), local work done (a
// handler that waits in a purgatory marks it, see request.localComplete),
// response ready (the slot completed), write started, end. A boundary
// that did not happen (no handler goroutine, no wait, nothing written)
// takes the next one's time, so its phase is zero and the phases always
// add up to the total; a request answered on the reader goroutine (no
// handler) has no queue time.
func requestTimes(rc *request, completedAt, sendStart, end time.Time) RequestTimes {
	clamp := func(t, lo, hi time.Time) time.Time {
		switch {
		case t.IsZero() || t.After(hi):
			return hi
		case t.Before(lo):
			return lo
		}
		return t
	}
	received := rc.received
	sent := clamp(sendStart, received, end)
	ready := clamp(completedAt, received, sent)
	dequeued := received // answered on the reader goroutine: no queue
	if !rc.dequeued.IsZero() {
		dequeued = clamp(rc.dequeued, received, ready)
	}
	local := clamp(rc.localDone, dequeued, ready)
	return RequestTimes{
		Queue:         dequeued.Sub(received),
		Local:         local.Sub(dequeued),
		Remote:        ready.Sub(local),
		ResponseQueue: sent.Sub(ready),
		ResponseSend:  end.Sub(sent),
		Total:         end.Sub(received),
	}
}

// requestDone records a request's end: its time split as Kafka's
// RequestMetrics splits it (RequestTimes), and every non-zero error code
// its response carries (ErrorsPerSec). Every request counted by
// RequestReceived ends here once, unless its connection closes while it is
// in flight.
func (c *conn) requestDone(key int16, t RequestTimes, resp kmsg.Response) {
	m := c.srv.metrics
	m.RequestCompleted(key, t)
	if resp != nil {
		reportErrorCodes(m, key, resp)
	}
}

// reportErrorCodes calls m.ResponseError for each non-zero ErrorCode field
// in resp, top level and nested (topics, partitions, groups, ...). Produce,
// Fetch and Metadata, the frequent ones, are walked directly; the rest, rare
// admin and group calls, by reflection.
func reportErrorCodes(m Metrics, key int16, resp kmsg.Response) {
	if fr, ok := resp.(*filesResponse); ok {
		resp = fr.Response
	}
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				reportCode(m, key, r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.FetchResponse:
		reportCode(m, key, r.ErrorCode)
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				reportCode(m, key, r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.MetadataResponse:
		for i := range r.Topics {
			reportCode(m, key, r.Topics[i].ErrorCode)
			for j := range r.Topics[i].Partitions {
				reportCode(m, key, r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	default:
		walkErrorCodes(reflect.ValueOf(resp), m, key)
	}
}

func reportCode(m Metrics, key, code int16) {
	if code != 0 {
		m.ResponseError(key, code)
	}
}

var int16Type = reflect.TypeFor[int16]()

// walkErrorCodes finds the int16 fields named ErrorCode in a kmsg response
// struct and its nested structs and slices of structs.
func walkErrorCodes(v reflect.Value, m Metrics, key int16) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			walkErrorCodes(v.Elem(), m, key)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Struct {
			return
		}
		for i := range v.Len() {
			walkErrorCodes(v.Index(i), m, key)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			switch {
			case !f.IsExported():
			case f.Name == "ErrorCode" && f.Type == int16Type:
				reportCode(m, key, int16(v.Field(i).Int()))
			case f.Type.Kind() == reflect.Struct, f.Type.Kind() == reflect.Slice, f.Type.Kind() == reflect.Pointer:
				walkErrorCodes(v.Field(i), m, key)
			}
		}
	}
}
