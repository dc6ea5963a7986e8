package replica

import "github.com/raftka/raftka/storage"

// truncationTarget decides where a follower cuts its log given the leader's
// answer for an epoch: leaderEpoch is the largest epoch the leader has at or
// below the one asked for, leaderEnd the offset where that epoch ends on the
// leader (OffsetForLeaderEpoch, KIP-279, or a Fetch DivergingEpoch, KIP-320).
// localEndFor answers the same question from the follower's own epoch cache
// and localLEO is its log end offset.
//
// The rule (Kafka's): if the follower has the leader's epoch, both agree up
// to the smaller of the two ends, and the cut is final. If the follower's
// largest epoch at or below it is older, the follower cuts at the end of that
// epoch and asks again (complete is false), walking back one epoch per round
// until the logs agree. If the follower has no epoch at or below it, the
// leader's end bounds what can match.
//
// ok is false when the leader's answer is undefined (it knows no such epoch):
// the caller retries later instead of guessing, and never falls back to the
// high watermark.
func truncationTarget(leaderEpoch int32, leaderEnd int64, localEndFor func(int32) (int32, int64), localLEO int64) (offset int64, complete, ok bool) {
	if leaderEnd == storage.UndefinedOffset || leaderEpoch == storage.UndefinedEpoch {
		return 0, false, false
	}
	e, end := localEndFor(leaderEpoch)
	switch {
	case e == storage.UndefinedEpoch || end == storage.UndefinedOffset:
		return min(leaderEnd, localLEO), true, true
	case e == leaderEpoch:
		return min(leaderEnd, end, localLEO), true, true
	default:
		return min(end, localLEO), false, true
	}
}
