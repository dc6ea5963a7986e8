package broker

import (
	"context"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Client quotas (KIP-13, KIP-124, KIP-257): produce and fetch byte rates
// per user, client id or both, resolved from the metadata image in
// Kafka's order (metadata.Image.ResolveQuota). Each resolved entity has a
// rate measured as Kafka's ClientQuotaManager measures it: samples of
// quota.window.size.seconds, quota.window.num of them, the rate being the
// bytes of the live samples over their span, at least one window. (Kafka
// pads the span to all but one window, which lets a new client send
// quota.window.num - 1 windows' worth at once before it is throttled;
// raftka pads to one, so a client's rate holds the quota from its first
// second.) A request that takes the rate over the quota is answered
// throttle_time_ms = (rate - quota) / quota * span, capped at the whole
// window, and the client is held back that long (request.throttle):
// nothing is dropped. Replication (follower fetch) is never
// throttled by client quotas.

// quotaSampler is one entity's windowed byte rate. Not safe for
// concurrent use; quotaManager locks around it.
type quotaSampler struct {
	window  time.Duration
	samples []quotaSample // oldest first, at most n
	n       int
}

type quotaSample struct {
	start time.Time
	bytes float64
}

// record adds bytes at now and returns the throttle time for quota (bytes
// per second); 0 when the rate stays within it.
func (s *quotaSampler) record(now time.Time, bytes, quota float64) time.Duration {
	if len(s.samples) == 0 || now.Sub(s.samples[len(s.samples)-1].start) >= s.window {
		s.samples = append(s.samples, quotaSample{start: now})
	}
	// Drop samples that have aged out of the whole window.
	cut := 0
	for cut < len(s.samples)-1 && now.Sub(s.samples[cut].start) >= time.Duration(s.n)*s.window {
		cut++
	}
	s.samples = s.samples[cut:]
	if len(s.samples) > s.n {
		s.samples = s.samples[len(s.samples)-s.n:]
	}
	s.samples[len(s.samples)-1].bytes += bytes

	var total float64
	for _, x := range s.samples {
		total += x.bytes
	}
	span := max(now.Sub(s.samples[0].start), s.window)
	rate := total / span.Seconds()
	if rate <= quota {
		return 0
	}
	limit := time.Duration(s.n) * s.window
	d := (rate - quota) / quota * float64(span)
	if d >= float64(limit) {
		return limit
	}
	return time.Duration(d)
}

// quotaManager holds the samplers of the entities that have a quota.
type quotaManager struct {
	window time.Duration
	n      int
	now    func() time.Time

	mu       sync.Mutex
	samplers map[string]*quotaSampler   // by quota key and resolved entity
	buckets  map[string]*mutationBucket // controller_mutation_rate, likewise
}

// quotaManager builds the server's from quota.window.size.seconds and
// quota.window.num (Kafka's defaults, 1 s and 11, without a config).
func (o *Options) quotaManager() *quotaManager {
	window, n := time.Second, 11
	if o.Config != nil {
		window, n = o.Config.QuotaWindowSize, int(o.Config.QuotaWindowNum)
	}
	return newQuotaManager(window, n, time.Now)
}

func newQuotaManager(window time.Duration, n int, now func() time.Time) *quotaManager {
	if window <= 0 {
		window = time.Second
	}
	if n < 1 {
		n = 11
	}
	return &quotaManager{window: window, n: n, now: now, samplers: map[string]*quotaSampler{}, buckets: map[string]*mutationBucket{}}
}

// record charges bytes to the client's quota of key and returns how long
// to hold its answer back (0 without a quota).
func (m *quotaManager) record(img *metadata.Image, principal, clientID, key string, bytes int) time.Duration {
	if m == nil || img == nil {
		return 0
	}
	user := strings.TrimPrefix(principal, "User:")
	q, ok := img.ResolveQuota(user, clientID, key)
	if !ok {
		return 0
	}
	k := key + "\x00" + q.Entity
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.samplers[k]
	if s == nil {
		s = &quotaSampler{window: m.window, n: m.n}
		m.samplers[k] = s
	}
	return s.record(m.now(), float64(bytes), q.Value)
}

// throttle charges a request's bytes to the connection's client and, when
// the quota is exceeded, returns the throttle time in milliseconds. As
// Kafka does since KIP-219 (clientThrottles: Produce v6+, Fetch v8+), the
// answer then goes out at once and the connection is muted: its next
// request is not read before the throttle time has passed, while the
// client backs off by itself. Older versions, whose clients do not back
// off, get the answer itself held back that long (or until ctx ends).
func (r *request) throttle(ctx context.Context, key string, bytes int, clientThrottles bool) int32 {
	d := r.conn.srv.quotas.record(r.authImage(), r.conn.principal, r.clientID, key, bytes)
	if d <= 0 {
		return 0
	}
	r.hold(ctx, d, clientThrottles)
	return int32(d / time.Millisecond)
}

// hold mutes the connection for d (a client that backs off by itself), or
// waits d before the answer goes out.
func (r *request) hold(ctx context.Context, d time.Duration, clientThrottles bool) {
	if clientThrottles {
		until := time.Now().Add(d).UnixNano()
		for {
			cur := r.conn.mutedUntil.Load()
			if cur >= until || r.conn.mutedUntil.CompareAndSwap(cur, until) {
				break
			}
		}
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// waitUnmuted holds the connection's reader while a throttle mutes it.
func (c *conn) waitUnmuted() {
	until := c.state.mutedUntil.Load()
	if until == 0 {
		return
	}
	d := time.Until(time.Unix(0, until))
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.ctx.Done():
	}
}

// Controller mutation quotas (KIP-599, controller_mutation_rate): the
// partitions CreateTopics, CreatePartitions and DeleteTopics create, add or
// delete, per second, measured as Kafka's ControllerMutationQuotaManager
// does with a token bucket holding quota x quota.window.num x
// quota.window.size.seconds tokens. In strict mode (CreateTopics v6+,
// CreatePartitions v3+, DeleteTopics v5+) a topic asked for while the
// bucket is below zero is refused THROTTLING_QUOTA_EXCEEDED and not sent
// on; a topic asked for while it is not is done, and may take the bucket
// below zero. Older versions are never refused. Either way the answer
// carries the time until the bucket is back at zero as throttle_time_ms.

// mutationBucket is one entity's token bucket.
type mutationBucket struct {
	tokens float64
	last   time.Time
}

// mutationQuota is one request's view of its client's bucket.
type mutationQuota struct {
	m    *quotaManager
	key  string
	rate float64
}

// mutationQuota returns the request's client's controller mutation quota,
// nil when it has none.
func (r *request) mutationQuota() *mutationQuota {
	m := r.conn.srv.quotas
	if m == nil {
		return nil
	}
	q, ok := r.authImage().ResolveQuota(strings.TrimPrefix(r.conn.principal, "User:"), r.clientID, metadata.QuotaControllerMutationRate)
	if !ok {
		return nil
	}
	return &mutationQuota{m: m, key: metadata.QuotaControllerMutationRate + "\x00" + q.Entity, rate: q.Value}
}

// bucket refills and returns the bucket; the caller holds m.mu.
func (q *mutationQuota) bucket() *mutationBucket {
	burst := q.rate * float64(q.m.n) * q.m.window.Seconds()
	now := q.m.now()
	b := q.m.buckets[q.key]
	if b == nil {
		b = &mutationBucket{tokens: burst, last: now}
		q.m.buckets[q.key] = b
	}
	b.tokens = min(burst, b.tokens+q.rate*now.Sub(b.last).Seconds())
	b.last = now
	return b
}

// admit charges n mutations unless the bucket is already below zero
// (strict mode refuses then; permissive mode always charges).
func (q *mutationQuota) admit(n int, strict bool) bool {
	if q == nil {
		return true
	}
	q.m.mu.Lock()
	defer q.m.mu.Unlock()
	b := q.bucket()
	if strict && b.tokens < 0 {
		return false
	}
	b.tokens -= float64(n)
	return true
}

// refund gives back n mutations a request charged but did not make.
func (q *mutationQuota) refund(n int) {
	if q == nil || n <= 0 {
		return
	}
	q.m.mu.Lock()
	defer q.m.mu.Unlock()
	b := q.bucket()
	b.tokens += float64(n)
}

// throttle is the time until the bucket is back at zero.
func (q *mutationQuota) throttle() time.Duration {
	if q == nil {
		return 0
	}
	q.m.mu.Lock()
	defer q.m.mu.Unlock()
	b := q.bucket()
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / q.rate * float64(time.Second))
}

// throttleFor holds the client back for d as request.throttle does, with
// whether this response's version has the client back off itself.
func (r *request) throttleFor(ctx context.Context, d time.Duration, resp kmsg.Response) {
	tr, ok := resp.(interface {
		kmsg.ThrottleResponse
		SetThrottle(int32)
	})
	if !ok || d <= 0 {
		return
	}
	_, clientThrottles := tr.Throttle()
	tr.SetThrottle(int32(min(d, time.Duration(math.MaxInt32)*time.Millisecond) / time.Millisecond))
	r.hold(ctx, d, clientThrottles)
}

// Request quotas (KIP-124, request_percentage): the time a client's
// requests keep a handler busy, as a percentage of one handler's time per
// second (Kafka's request-handler and network thread time; 200 is two
// handlers' worth). A request's charge is its local time, from its handler
// starting to its answer or to its wait in a purgatory (long-poll fetches
// and acks=all waits cost nothing), measured on the same windows as the
// byte rates. Over the quota the answer carries throttle_time_ms (the
// larger of this and a byte quota's) and the connection is muted as for
// the byte quotas. Replica fetches, as cluster actions in Kafka, are
// exempt; so are ApiVersions and the SASL exchange, which Kafka answers
// before any quota applies.

// recordAmount charges amount (a byte count, or a percentage of a second)
// to the client's quota of key and returns the throttle time.
func (m *quotaManager) recordAmount(img *metadata.Image, principal, clientID, key string, amount float64) time.Duration {
	if m == nil || img == nil {
		return 0
	}
	q, ok := img.ResolveQuota(strings.TrimPrefix(principal, "User:"), clientID, key)
	if !ok {
		return 0
	}
	k := key + "\x00" + q.Entity
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.samplers[k]
	if s == nil {
		s = &quotaSampler{window: m.window, n: m.n}
		m.samplers[k] = s
	}
	return s.record(m.now(), amount, q.Value)
}

// requestQuotaExempt reports the requests request_percentage never charges.
func requestQuotaExempt(req kmsg.Request) bool {
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest, *kmsg.SASLHandshakeRequest, *kmsg.SASLAuthenticateRequest:
		return true
	case *kmsg.FetchRequest:
		return r.ReplicaID >= 0 || r.ReplicaState.ID >= 0
	}
	return false
}

// chargeRequestTime charges a finished request's handler time to its
// client's request_percentage and throttles the answer when it is over.
func (r *request) chargeRequestTime(ctx context.Context, req kmsg.Request, resp kmsg.Response) {
	m := r.conn.srv.quotas
	if m == nil || resp == nil || r.dequeued.IsZero() || requestQuotaExempt(req) {
		return
	}
	end := r.localDone
	if end.IsZero() {
		end = time.Now()
	}
	used := end.Sub(r.dequeued)
	d := m.recordAmount(r.authImage(), r.conn.principal, r.clientID, metadata.QuotaRequestPercentage, used.Seconds()*100)
	if d <= 0 {
		return
	}
	tr, ok := resp.(interface {
		kmsg.ThrottleResponse
		SetThrottle(int32)
	})
	if !ok {
		r.hold(ctx, d, false)
		return
	}
	ms, clientThrottles := tr.Throttle()
	if want := int32(min(d, time.Duration(math.MaxInt32)*time.Millisecond) / time.Millisecond); want > ms {
		tr.SetThrottle(want)
	}
	r.hold(ctx, d, clientThrottles)
}

// Connection creation quotas (KIP-612). Per IP, connection_creation_rate
// (an ip entity, named or the default): a connection over the rate is
// accepted, not served, and closed after the throttle time, and it is not
// counted in the rate, as Kafka's ConnectionQuotas does. Per listener,
// listener.name.<l>.max.connection.creation.rate (the inter-broker
// listener too), and broker-wide, max.connection.creation.rate across
// every listener but the inter-broker one: a connection over either is
// served, and the listener accepts nothing more until the longer of the
// two throttle times has passed (new connections wait in the kernel's
// backlog), as Kafka's Acceptor does.

// connectionRates holds the broker-wide and per-listener samplers.
type connectionRates struct {
	m         *quotaManager
	limit     float64            // max.connection.creation.rate; 0 or max int32: none
	perListen map[string]float64 // listener.name.<l>.max.connection.creation.rate

	mu        sync.Mutex
	broker    *quotaSampler
	listeners map[string]*quotaSampler
}

// ipThrottle records a new connection from ip and returns how long to hold
// it before closing it unserved (0: serve it).
func (s *Server) ipThrottle(ip string) time.Duration {
	m := s.quotas
	if m == nil || s.deps.Metadata == nil || ip == "" {
		return 0
	}
	img, _ := s.deps.Metadata.Current()
	if img == nil {
		return 0
	}
	q, ok := img.ResolveIPQuota(ip)
	if !ok {
		return 0
	}
	k := metadata.QuotaConnectionCreationRate + "\x00" + q.Entity + "\x00" + ip
	m.mu.Lock()
	defer m.mu.Unlock()
	sm := m.samplers[k]
	if sm == nil {
		sm = &quotaSampler{window: m.window, n: m.n}
		m.samplers[k] = sm
	}
	now := m.now()
	d := sm.record(now, 1, q.Value)
	if d > 0 {
		sm.record(now, -1, q.Value) // a refused connection is not counted
	}
	return d
}

// limited reports whether a connection creation limit is set.
func limited(limit float64) bool { return limit > 0 && limit < math.MaxInt32 }

// acceptThrottle records a new connection on listener (broker-wide too
// unless it is the inter-broker listener) and returns how long the
// listener waits before accepting the next one.
func (cr *connectionRates) acceptThrottle(listener string, interBroker bool) time.Duration {
	if cr == nil {
		return 0
	}
	ll, brokerWide := cr.perListen[listener], !interBroker && limited(cr.limit)
	if !limited(ll) && !brokerWide {
		return 0
	}
	cr.mu.Lock()
	defer cr.mu.Unlock()
	now := cr.m.now()
	var d time.Duration
	if limited(ll) {
		sm := cr.listeners[listener]
		if sm == nil {
			if cr.listeners == nil {
				cr.listeners = map[string]*quotaSampler{}
			}
			sm = &quotaSampler{window: cr.m.window, n: cr.m.n}
			cr.listeners[listener] = sm
		}
		d = sm.record(now, 1, ll)
	}
	if brokerWide {
		if cr.broker == nil {
			cr.broker = &quotaSampler{window: cr.m.window, n: cr.m.n}
		}
		d = max(d, cr.broker.record(now, 1, cr.limit))
	}
	return d
}
