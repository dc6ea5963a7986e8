package storage

import (
	"sync"
	"sync/atomic"
	"time"
)

// flushWorkers is how many fsyncs one flusher round has in flight at
// once. The file system commits concurrent fsyncs of different files in
// one journal transaction (ext4's jbd2, XFS's log force), so a round over
// many logs costs little more than one fsync. Eight covers a broker's
// partitions of a small cluster (2 led and 4 followed of 6 at RF=3 on
// three nodes) in one wave; a round over more logs takes several waves.
const flushWorkers = 8

// flusher is one log dir's group commit for durable mode (flush.messages=1,
// see doc.go "Durable mode"). Appends to a durable log queue the log
// (once, however many appends there were) and return; the flusher's
// goroutine takes everything queued as one round, fsyncs the logs' new
// data with flushWorkers fsyncs in flight, advances each log's durable end
// and calls its OnDurable hook, and closes the round's channel. Whatever
// was appended before a round began is durable when it ends: a round
// covers every batch appended to every log of the dir since the last one,
// across partitions and requests, leader and follower appends alike.
type flusher struct {
	mu      sync.Mutex
	queue   []*Log        // logs for the next round, each once (Log.queued)
	next    chan struct{} // closed when the round the queue feeds ends
	closed  bool
	started bool // the goroutines run (from the first enqueue: a node without durable logs has none)

	kick     chan struct{} // one slot: the queue is not empty
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}

	// onRound, when set, is told each round's size and duration
	// (ManagerOptions.OnFlushRound).
	onRound func(logs int, d time.Duration)

	// The round in progress: the workers take logs by index.
	round []*Log
	idx   atomic.Int64
	work  chan struct{}
	wg    sync.WaitGroup
}

// closedChan is returned when nothing needs waiting for.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func newFlusher(onRound func(int, time.Duration)) *flusher {
	return &flusher{
		next: make(chan struct{}), kick: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}),
		work: make(chan struct{}), onRound: onRound,
	}
}

// startLocked starts the goroutines. f.mu is held.
func (f *flusher) startLocked() {
	f.started = true
	for range flushWorkers - 1 {
		go f.worker()
	}
	go f.run()
}

// enqueue queues l for the next round and returns the channel closed when
// that round ends (when everything l held at the call is durable, unless
// its fsync failed: see Log.FlushError). It allocates nothing. After close
// it syncs l itself and returns a closed channel.
func (f *flusher) enqueue(l *Log) <-chan struct{} {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		_ = l.syncDurable()
		return closedChan
	}
	if !f.started {
		f.startLocked()
	}
	if !l.queued {
		l.queued = true
		f.queue = append(f.queue, l)
	}
	ch := f.next
	f.mu.Unlock()
	select {
	case f.kick <- struct{}{}:
	default:
	}
	return ch
}

func (f *flusher) run() {
	defer close(f.done)
	var spare []*Log
	for {
		select {
		case <-f.stop:
			f.mu.Lock()
			f.closed = true
			logs, done := f.queue, f.next
			f.queue = nil
			f.mu.Unlock()
			// The last round: nobody waits on a flusher that is gone.
			f.flush(logs)
			close(done)
			return
		case <-f.kick:
		}
		f.mu.Lock()
		logs, done := f.queue, f.next
		if len(logs) == 0 {
			f.mu.Unlock()
			continue
		}
		f.queue, f.next = spare, make(chan struct{})
		for _, l := range logs {
			l.queued = false
		}
		f.mu.Unlock()
		f.flush(logs)
		close(done)
		clear(logs)
		spare = logs[:0]
	}
}

// flush is one round: every log's data made durable, then the hooks.
func (f *flusher) flush(logs []*Log) {
	if len(logs) == 0 {
		return
	}
	start := time.Now()
	n := min(len(logs), flushWorkers)
	f.round = logs
	f.idx.Store(0)
	f.wg.Add(n - 1)
	for range n - 1 {
		f.work <- struct{}{}
	}
	f.drain()
	f.wg.Wait()
	f.round = nil
	if f.onRound != nil {
		f.onRound(len(logs), time.Since(start))
	}
	for _, l := range logs {
		if h := l.onDurable.Load(); h != nil {
			(*h)()
		}
	}
}

func (f *flusher) worker() {
	for {
		select {
		case <-f.work:
			f.drain()
			f.wg.Done()
		case <-f.done:
			return
		}
	}
}

// drain syncs logs of the current round until none is left. A failed
// fsync is kept by the log (FlushError); the others go on.
func (f *flusher) drain() {
	for {
		i := int(f.idx.Add(1)) - 1
		if i >= len(f.round) {
			return
		}
		_ = f.round[i].syncDurable()
	}
}

// close ends the flusher after one last round of what is queued.
func (f *flusher) close() {
	f.mu.Lock()
	if f.closed || !f.started {
		f.closed = true
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	f.stopOnce.Do(func() { close(f.stop) })
	<-f.done
}
