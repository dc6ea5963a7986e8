package storage

import "sync"

// groupSync coalesces one kind of durable write (an fsync of one
// directory, a rewrite of the checkpoint files) between the goroutines that
// ask for it at once. A caller is answered by a round that started after
// its call, so everything it changed before calling is covered; the
// callers that arrive while a round runs share the next one. Each caller
// gets the error of the round that covered it, so a failure reaches every
// change it leaves undurable, as a call of its own would.
//
// It exists for creations and deletions of many partitions at once (a
// CreateTopics or DeleteTopics of many topics, a restart): one directory
// fsync of the log dir serves every new or removed partition directory
// under it, and one checkpoint rewrite every deleted partition.
type groupSync struct {
	run func() error

	mu      sync.Mutex
	running bool
	next    *syncRound // the round callers arriving now wait for
}

type syncRound struct {
	done    chan struct{}
	err     error
	callers int // callers waiting for it (guarded by groupSync.mu; tests read it)
}

func newGroupSync(run func() error) *groupSync { return &groupSync{run: run} }

// do returns once a round started after this call has finished, with its
// error. The caller that finds no round running runs rounds itself until
// none is asked for, so no round waits for a goroutine that is not there.
func (g *groupSync) do() error {
	g.mu.Lock()
	r := g.next
	if r == nil {
		r = &syncRound{done: make(chan struct{})}
		g.next = r
	}
	r.callers++
	if g.running {
		g.mu.Unlock()
		<-r.done
		return r.err
	}
	g.running = true
	for {
		cur := g.next
		if cur == nil {
			g.running = false
			g.mu.Unlock()
			return r.err
		}
		g.next = nil
		g.mu.Unlock()
		cur.err = g.run()
		close(cur.done)
		g.mu.Lock()
	}
}

// dirSyncs holds one groupSync per directory.
type dirSyncs struct {
	mu sync.Mutex
	m  map[string]*groupSync
}

// sync fsyncs dir, sharing the fsync with concurrent callers for the same
// dir (groupSync).
func (d *dirSyncs) sync(dir string) error {
	d.mu.Lock()
	if d.m == nil {
		d.m = map[string]*groupSync{}
	}
	g := d.m[dir]
	if g == nil {
		g = newGroupSync(func() error { return fsyncDir(dir) })
		d.m[dir] = g
	}
	d.mu.Unlock()
	return g.do()
}
