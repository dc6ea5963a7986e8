package group

import (
	"slices"
	"time"

	"github.com/raftka/raftka/metadata"
)

// Observer hears of the coordinator's events, for metrics; the broker
// adapts it. Calls come from the groups' loops and must be quick.
type Observer interface {
	// RebalanceCompleted reports a rebalance of a group coordinated here
	// that reached Stable, d after it entered PreparingRebalance (a
	// rebalance restarted before it completed counts once, from its first
	// start; one that ends with no members is not reported).
	RebalanceCompleted(d time.Duration)
}

// rebalanceDone ends the rebalance in progress, if any, at now.
func (g *Group) rebalanceDone(now time.Time) {
	if g.rebalanceStarted.IsZero() {
		return
	}
	g.rebalanced = append(g.rebalanced, now.Sub(g.rebalanceStarted))
	g.rebalanceStarted = time.Time{}
}

// TakeRebalances returns the durations of the rebalances that reached
// Stable since the last call.
func (g *Group) TakeRebalances() []time.Duration {
	r := g.rebalanced
	g.rebalanced = nil
	return r
}

// report publishes the loop's group state for Stats and hands completed
// rebalances to the observer; the loop calls it after each round.
func (c *Coordinator) report(l *loop, g *Group) {
	if g == nil {
		l.state.Store(-1)
		return
	}
	l.state.Store(int32(g.State()))
	for _, d := range g.TakeRebalances() {
		if c.cfg.Observer != nil {
			c.cfg.Observer.RebalanceCompleted(d)
		}
	}
}

// GroupStat is one group this broker coordinates, as a metrics scrape
// sees it.
type GroupStat struct {
	ID    string
	State State
}

// Stats returns the groups this broker coordinates under img, by id: a
// loaded group in the state its loop last reported, one only the image
// knows as Empty (as ListGroups reports it). It takes the coordinator's
// lock once and queues nothing on the groups' loops, so a scrape never
// waits behind a rebalance or a commit.
func (c *Coordinator) Stats(img *metadata.Image) []GroupStat {
	if img == nil {
		return nil
	}
	c.mu.Lock()
	loaded := make(map[string]State, len(c.groups))
	for id, l := range c.groups {
		if s := l.state.Load(); s >= 0 {
			loaded[id] = State(s)
		}
	}
	c.mu.Unlock()
	names := slices.Clone(img.Groups())
	for id := range loaded {
		if _, found := slices.BinarySearch(img.Groups(), id); !found {
			names = append(names, id)
		}
	}
	slices.Sort(names)
	out := make([]GroupStat, 0, len(names))
	for _, id := range names {
		if code, _ := ownership(img, c.cfg.NodeID, id); code != 0 {
			continue
		}
		st, ok := loaded[id]
		if !ok {
			st = Empty
		}
		if st == Dead {
			continue
		}
		out = append(out, GroupStat{ID: id, State: st})
	}
	return out
}
