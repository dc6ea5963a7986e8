package broker

import (
	"sync"
	"sync/atomic"
	"time"
)

// Reason names why a frame or request was not answered normally.
type Reason int

const (
	ReasonFrameTooLarge       Reason = iota // size prefix above socket.request.max.bytes
	ReasonFrameNegative                     // size prefix below zero
	ReasonBadHeader                         // request header does not parse
	ReasonUnknownKey                        // API key not in the table
	ReasonUnsupportedVersion                // version not advertised (ApiVersions excepted: answered per KIP-511)
	ReasonUndecodable                       // body does not decode at its version
	ReasonHandlerError                      // handler returned an error
	ReasonHandlerPanic                      // handler (or encoder) panicked
	ReasonNotTLS                            // a client that does not speak TLS on a TLS listener
	ReasonTLSHandshake                      // TLS handshake failed (untrusted or missing certificate, no common version)
	ReasonAuthFailed                        // SASL authentication failed (unknown user, wrong password)
	ReasonSASLState                         // a request not allowed before authentication, or a broken SASL exchange
	ReasonSessionExpired                    // a request after the SASL session's lifetime without re-authentication (KIP-368)
	ReasonConnectionThrottled               // a connection over its IP's connection_creation_rate, closed unserved (KIP-612)
	numReasons
)

var reasonNames = [numReasons]string{
	"frame_too_large", "frame_negative", "bad_header", "unknown_key",
	"unsupported_version", "undecodable", "handler_error", "handler_panic",
	"not_tls", "tls_handshake", "authentication_failed", "illegal_sasl_state",
	"session_expired", "connection_throttled",
}

func (r Reason) String() string {
	if r < 0 || r >= numReasons {
		return "unknown"
	}
	return reasonNames[r]
}

// Metrics receives the server's counters. Implementations must be safe for
// concurrent use: every connection's goroutines call it. cmd adapts it to
// Prometheus; the broker package itself stays free of a metrics library so
// that tests read plain numbers.
type Metrics interface {
	ConnOpened(listener string)
	ConnClosed(listener string)
	// RequestReceived counts a request that will be answered: it decoded,
	// or it is ApiVersions at a version we answer per KIP-511.
	RequestReceived(key, version int16, frameBytes int)
	// ResponseSent counts a response written in full, size prefix included.
	ResponseSent(key, version int16, bytes int64)
	// Rejected counts a frame or request that got an error or a close.
	Rejected(r Reason)
	// BatchRefused counts a produced batch the leader refused for its
	// content (reason: corrupt_message, invalid_record, message_too_large,
	// invalid_timestamp) by the client id that sent it, so an operator
	// can find a bad producer. clientID is already bounded in length and
	// in how many distinct values reach here (see refusalClientLabel).
	BatchRefused(reason, clientID string)
	// RequestCompleted ends a request counted by RequestReceived with its
	// time split as Kafka's RequestMetrics splits it (RequestTimes). Only a
	// request whose connection closes while it is in flight is not
	// reported.
	RequestCompleted(key int16, t RequestTimes)
	// ResponseError counts one non-zero error code a response carries, at
	// the top level or for one partition, topic or group in it (Kafka's
	// RequestMetrics ErrorsPerSec, without its NONE count).
	ResponseError(key, code int16)
	// TopicProduced counts a batch a producer sent that this broker
	// appended as leader: its bytes as sent and the record count from its
	// header (Kafka's BrokerTopicMetrics BytesInPerSec, MessagesInPerSec).
	// Follower appends and retried duplicates are not counted.
	TopicProduced(topic string, bytes, records int64)
	// TopicFetched counts record bytes sent to a consumer (not a follower)
	// from one topic in a Fetch response (BytesOutPerSec).
	TopicFetched(topic string, bytes int64)
}

// RequestTimes is one request's life in Kafka's RequestMetrics phases,
// which add up to Total:
//
//	Queue          receipt to its handler starting (RequestQueueTimeMs)
//	Local          the handler's own work (LocalTimeMs)
//	Remote         waiting on others: an acks=all Produce for the ISR, a
//	               Fetch for bytes (RemoteTimeMs); zero when it did not wait
//	ResponseQueue  response ready to the writer taking it; the writer
//	               answers in request order, so this includes waiting for
//	               earlier responses on the connection (ResponseQueueTimeMs)
//	ResponseSend   writing the response (ResponseSendTimeMs)
//	Total          receipt to the response written, or to its end without
//	               one: acks=0 Produce, a failed handler (TotalTimeMs)
type RequestTimes struct {
	Queue, Local, Remote, ResponseQueue, ResponseSend, Total time.Duration
}

// Counters is a Metrics kept in memory with atomics. It is the default when
// Options.Metrics is nil, and what tests read.
type Counters struct {
	connsOpen   atomic.Int64
	connsTotal  atomic.Uint64
	bytesIn     atomic.Uint64
	bytesOut    atomic.Uint64
	requests    [countedKeys][countedVersions]atomic.Uint64
	responses   atomic.Uint64
	rejected    [numReasons]atomic.Uint64
	requestsAll atomic.Uint64

	refusedMu sync.Mutex
	refused   map[refusalKey]uint64

	completed [countedKeys]atomic.Uint64
	remote    [countedKeys]atomic.Uint64 // completed with Remote > 0
	errorsMu  sync.Mutex
	errors    map[[2]int16]uint64 // by key, code
	topicsMu  sync.Mutex
	topics    map[string]*TopicCounts
}

// TopicCounts is one topic's produce and fetch traffic.
type TopicCounts struct {
	BytesIn, RecordsIn, BytesOut int64
}

type refusalKey struct{ reason, clientID string }

// Request keys and versions beyond these are counted only in the totals;
// Kafka's keys end below 100 and no API has reached version 32.
const (
	countedKeys     = 128
	countedVersions = 32
)

// CounterSnapshot is a point-in-time copy of Counters.
type CounterSnapshot struct {
	ConnsOpen, ConnsTotal int64
	BytesIn, BytesOut     uint64
	Requests, Responses   uint64
	Rejected              map[string]uint64 // by Reason.String; zero counts omitted
}

func (c *Counters) ConnOpened(string) { c.connsOpen.Add(1); c.connsTotal.Add(1) }
func (c *Counters) ConnClosed(string) { c.connsOpen.Add(-1) }

func (c *Counters) RequestReceived(key, version int16, frameBytes int) {
	c.requestsAll.Add(1)
	c.bytesIn.Add(uint64(frameBytes))
	if key >= 0 && key < countedKeys && version >= 0 && version < countedVersions {
		c.requests[key][version].Add(1)
	}
}

func (c *Counters) ResponseSent(_, _ int16, bytes int64) {
	c.responses.Add(1)
	c.bytesOut.Add(uint64(bytes))
}

func (c *Counters) Rejected(r Reason) {
	if r >= 0 && r < numReasons {
		c.rejected[r].Add(1)
	}
}

// BatchRefused is rare (a bad producer), so a locked map is enough.
func (c *Counters) BatchRefused(reason, clientID string) {
	c.refusedMu.Lock()
	defer c.refusedMu.Unlock()
	if c.refused == nil {
		c.refused = make(map[refusalKey]uint64)
	}
	c.refused[refusalKey{reason, clientID}]++
}

// RefusedFor returns how many produced batches from clientID were refused
// for reason.
func (c *Counters) RefusedFor(reason, clientID string) uint64 {
	c.refusedMu.Lock()
	defer c.refusedMu.Unlock()
	return c.refused[refusalKey{reason, clientID}]
}

// RequestsFor returns how many requests of key at version were received.
func (c *Counters) RequestsFor(key, version int16) uint64 {
	if key < 0 || key >= countedKeys || version < 0 || version >= countedVersions {
		return 0
	}
	return c.requests[key][version].Load()
}

// RejectedFor returns the count for one reason.
func (c *Counters) RejectedFor(r Reason) uint64 {
	if r < 0 || r >= numReasons {
		return 0
	}
	return c.rejected[r].Load()
}

// Snapshot copies the counters.
func (c *Counters) Snapshot() CounterSnapshot {
	s := CounterSnapshot{
		ConnsOpen:  c.connsOpen.Load(),
		ConnsTotal: int64(c.connsTotal.Load()),
		BytesIn:    c.bytesIn.Load(),
		BytesOut:   c.bytesOut.Load(),
		Requests:   c.requestsAll.Load(),
		Responses:  c.responses.Load(),
		Rejected:   make(map[string]uint64),
	}
	for r := range numReasons {
		if n := c.rejected[r].Load(); n > 0 {
			s.Rejected[r.String()] = n
		}
	}
	return s
}

func (c *Counters) RequestCompleted(key int16, t RequestTimes) {
	if key >= 0 && key < countedKeys {
		c.completed[key].Add(1)
		if t.Remote > 0 {
			c.remote[key].Add(1)
		}
	}
}

// RemoteFor returns how many completed requests of key spent time waiting
// on others (a purgatory).
func (c *Counters) RemoteFor(key int16) uint64 {
	if key < 0 || key >= countedKeys {
		return 0
	}
	return c.remote[key].Load()
}

func (c *Counters) ResponseError(key, code int16) {
	c.errorsMu.Lock()
	defer c.errorsMu.Unlock()
	if c.errors == nil {
		c.errors = make(map[[2]int16]uint64)
	}
	c.errors[[2]int16{key, code}]++
}

func (c *Counters) topic(name string) *TopicCounts {
	if c.topics == nil {
		c.topics = make(map[string]*TopicCounts)
	}
	t := c.topics[name]
	if t == nil {
		t = &TopicCounts{}
		c.topics[name] = t
	}
	return t
}

func (c *Counters) TopicProduced(topic string, bytes, records int64) {
	c.topicsMu.Lock()
	defer c.topicsMu.Unlock()
	t := c.topic(topic)
	t.BytesIn += bytes
	t.RecordsIn += records
}

func (c *Counters) TopicFetched(topic string, bytes int64) {
	c.topicsMu.Lock()
	defer c.topicsMu.Unlock()
	c.topic(topic).BytesOut += bytes
}

// CompletedFor returns how many requests of key were reported completed.
func (c *Counters) CompletedFor(key int16) uint64 {
	if key < 0 || key >= countedKeys {
		return 0
	}
	return c.completed[key].Load()
}

// ErrorsFor returns how many times responses to key carried code.
func (c *Counters) ErrorsFor(key, code int16) uint64 {
	c.errorsMu.Lock()
	defer c.errorsMu.Unlock()
	return c.errors[[2]int16{key, code}]
}

// Topic returns a topic's traffic counts.
func (c *Counters) Topic(name string) TopicCounts {
	c.topicsMu.Lock()
	defer c.topicsMu.Unlock()
	if t := c.topics[name]; t != nil {
		return *t
	}
	return TopicCounts{}
}
