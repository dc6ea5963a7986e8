package broker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handlerFunc answers one decoded request. It runs on a goroutine of its own
// (never on the connection's reader or writer), so it may block, but it must
// return promptly once ctx is done: Server.Close waits for it.
//
// Returning (resp, nil) queues resp to be written in request order; resp's
// version is forced to the request's version by the writer. Returning
// (nil, nil) sends nothing (Produce with acks=0). Returning an error means
// the request cannot be answered in the protocol: the connection is closed
// and the error logged and counted, like Kafka does for a request it fails to
// handle. Per-partition failures belong in the response (see errorCode), not
// in the error.
type handlerFunc func(ctx context.Context, rc *request, req kmsg.Request) (kmsg.Response, error)

// rejectFunc answers a request whose version is advertised but no longer
// accepted (see apiEntry.advertisedMin). It must not block.
type rejectFunc func(req kmsg.Request) kmsg.Response

// apiEntry is one row of the table of implemented APIs.
type apiEntry struct {
	key int16

	// advertisedMin is what ApiVersions reports as the minimum. It is below
	// min only where clients need an old version to be advertised although
	// Kafka 4 no longer serves it (Produce v0-v2, see ARCHITECTURE.md, "Protocol notes"):
	// versions in [advertisedMin, min) are decoded and answered by reject.
	advertisedMin int16
	min, max      int16

	// quietBelow is how many versions below advertisedMin handle still
	// answers without ApiVersions advertising them. Only ListOffsets has
	// one: v0, which Kafka 4 removed (KIP-896) but Debian's Burrow 1.2.1
	// (before 1.9.4) and old sarama send without looking at ApiVersions.
	// Answering it keeps those lag monitors working while clients that
	// negotiate see Kafka 4.1's range and never send it.
	quietBelow int16

	// concurrent means the handler has no side effects whose order matters
	// relative to later requests on the same connection, so the next request
	// may start before this one finishes. Otherwise the connection's next
	// request starts only after this handler returns or calls
	// request.release (Kafka serializes a connection's requests entirely;
	// we keep that order for side effects and overlap only the waiting).
	concurrent bool

	handle handlerFunc
	reject rejectFunc
}

// apiTable is the set of APIs one Server answers. It is built before the
// Server starts and read-only afterwards, so connections read it without
// locks.
type apiTable struct {
	entries map[int16]*apiEntry
}

func newAPITable() *apiTable { return &apiTable{entries: make(map[int16]*apiEntry)} }

// add validates and inserts e. Errors are programmer errors in an api_*.go
// registration, never client input.
func (t *apiTable) add(e apiEntry) error {
	probe := kmsg.RequestForKey(e.key)
	switch {
	case probe == nil:
		return fmt.Errorf("broker: api key %d unknown to kmsg", e.key)
	case e.handle == nil:
		return fmt.Errorf("broker: api key %d registered without a handler", e.key)
	case e.advertisedMin < 0 || e.advertisedMin > e.min || e.min > e.max:
		return fmt.Errorf("broker: api key %d: bad version range advertised %d, accepted %d-%d", e.key, e.advertisedMin, e.min, e.max)
	case e.max > probe.MaxVersion():
		return fmt.Errorf("broker: api key %d: max version %d above kmsg's %d", e.key, e.max, probe.MaxVersion())
	case e.quietBelow < 0 || e.quietBelow > e.advertisedMin || (e.quietBelow > 0 && e.advertisedMin != e.min):
		return fmt.Errorf("broker: api key %d: %d quiet versions below advertised %d (accepted from %d)", e.key, e.quietBelow, e.advertisedMin, e.min)
	case e.advertisedMin < e.min && e.reject == nil:
		return fmt.Errorf("broker: api key %d advertises %d below its minimum %d without a reject func", e.key, e.advertisedMin, e.min)
	}
	if _, dup := t.entries[e.key]; dup {
		return fmt.Errorf("broker: api key %d registered twice", e.key)
	}
	t.entries[e.key] = &e
	return nil
}

func (t *apiTable) lookup(key int16) *apiEntry { return t.entries[key] }

// clone copies the table so a test can add handlers without touching the
// package-wide one.
func (t *apiTable) clone() *apiTable {
	c := newAPITable()
	for k, e := range t.entries {
		cp := *e
		c.entries[k] = &cp
	}
	return c
}

// apiKeys is the ApiVersions key list: every registered key, ascending, with
// its advertised range.
func (t *apiTable) apiKeys() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(t.entries))
	for _, e := range t.entries {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = e.key, e.advertisedMin, e.max
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b kmsg.ApiVersionsResponseApiKey) int { return int(a.ApiKey) - int(b.ApiKey) })
	return keys
}

// versionCheck says what to do with a request for a registered key.
type versionCheck int

const (
	versionOK          versionCheck = iota // decode and handle
	versionRejected                        // decode and answer with entry.reject
	versionUnsupported                     // not advertised: KIP-511 reply for ApiVersions, else close
)

func (e *apiEntry) check(version int16) versionCheck {
	switch {
	case version < e.advertisedMin && version >= e.advertisedMin-e.quietBelow:
		return versionOK
	case version < e.advertisedMin || version > e.max:
		return versionUnsupported
	case version < e.min:
		return versionRejected
	default:
		return versionOK
	}
}

// defaultAPIs is filled by the init functions of the api_*.go files and is
// the table every Server built by New answers from.
var defaultAPIs = newAPITable()

// register adds an API to defaultAPIs. It is called only from init in the
// api_*.go files; a bad registration is a bug in this package and stops the
// program at start-up rather than advertising something unanswerable.
func register(e apiEntry) {
	if err := defaultAPIs.add(e); err != nil {
		panic(err)
	}
}

// request is what a handler learns about its request besides the body.
type request struct {
	conn          *connState
	key, version  int16
	correlationID int32
	clientID      string // "" when the client sent null, as Kafka treats it
	received      time.Time
	// dequeued is when its handler goroutine started and localDone when
	// the handler finished its local work and began waiting on others
	// (a purgatory); both are written by the handler goroutine before it
	// completes the slot and read after, for RequestTimes.
	dequeued, localDone time.Time
	// catchUpBy bounds the waits of Server.catchUp for this request
	// together (zero until the first); only its handler goroutine uses it.
	catchUpBy time.Time
	// fromReplica marks a follower's Fetch or OffsetForLeaderEpoch, whose
	// catch-up waits are counted apart from clients' (CatchUpWaits).
	fromReplica bool

	releaseOnce sync.Once
	released    chan struct{}
}

// localComplete marks the end of the request's local time: what follows,
// until the handler answers, is remote time (Kafka's RemoteTimeMs: waiting
// in the produce or fetch purgatory). Only the first call counts.
func (r *request) localComplete() {
	if r.localDone.IsZero() {
		r.localDone = time.Now()
	}
}

// release lets the connection start its next request although this one has
// not finished. A handler of a non-concurrent API calls it once the part
// whose order matters is done (Produce: after the append, before waiting for
// acks=all). Calling it more than once, or from a concurrent API, is harmless.
func (r *request) release() { r.releaseOnce.Do(func() { close(r.released) }) }
