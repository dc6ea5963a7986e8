package broker

// ShareFetch (key 78): v1-v2, as Kafka 4.2.
//
// Behaviour (Kafka's SharePartitionManager and SharePartition):
//   - The share session (share_sessions.go): epoch 0 opens one, each
//     further request carries the next epoch (INVALID_SHARE_SESSION_EPOCH
//     otherwise, SHARE_SESSION_NOT_FOUND with none), -1 closes it and
//     releases what the member holds here; group.share.max.share.sessions
//     bounds them (SHARE_SESSION_LIMIT_REACHED). Topics add partitions to
//     the session, then ForgottenTopicsData removes them (in that order,
//     as Kafka's ShareSession.update: a partition in both is not in the
//     session afterwards).
//   - Acknowledgements carried in the request are applied per partition,
//     all or nothing (INVALID_RECORD_STATE for an offset this member does
//     not hold, or whose lock expired; INVALID_REQUEST for malformed
//     batches), and answered in AcknowledgeErrorCode only once they are
//     durable (record 50 through the controller, coalesced).
//   - Then every partition of the session that this node leads is read
//     from its share-partition's next fetch offset (up to the high
//     watermark, or the last stable offset under share.isolation.level
//     read_committed, whose aborted and control batches are archived
//     undelivered), and the available records are acquired for the member
//     under a lock of share.record.lock.duration.ms, at most MaxRecords
//     (ShareAcquireMode 1, v2) or to a batch boundary past it (mode 0).
//     AcquiredRecords carries their ranges with delivery counts; Records
//     the whole log batches that hold them. The answer waits until the
//     raised delivery counts are durable (in the same coalesced write as
//     the request's acknowledgements, usually): the issue asks that a
//     failover keeps them, where Kafka's SharePartition.acquire does not
//     write them (KIP-932: "memory of the in-flight delivery will be
//     lost"). A partition whose write fails is answered with the error and
//     no records. With nothing acquired the
//     request waits up to MaxWaitMillis for new records or for held ones
//     to come back. Partitions not led here: NOT_LEADER_OR_FOLLOWER with
//     CurrentLeader and NodeEndpoints; unknown topic ids UNKNOWN_TOPIC_ID.
//   - Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED, top
//     level), READ on each topic (TOPIC_AUTHORIZATION_FAILED per partition).
//
// Version notes: v0 (Kafka 4.0's early access) is not served. v2:
// ShareAcquireMode (KIP-1206) and renew acknowledgements (type 4, KIP-1222,
// IsRenewAck: acknowledgements only, no records acquired; fetch sizes
// other than 0, or a partition without acknowledgements, INVALID_REQUEST);
// a v1 request with type 4 is INVALID_REQUEST.
//
// Membership: as Kafka's KafkaApis.handleShareFetchRequest and
// SharePartitionManager, the member is not checked against the group's
// membership (the partition leader is not the group coordinator; the
// member id only names the share session and the holder of the records).
// What a member holds is released by its session ending, its connection
// closing, or its locks expiring.

import (
	"context"
	"time"

	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/broker/share"
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{key: 78, advertisedMin: 1, min: 1, max: 2, handle: handleShareFetch})
	register(apiEntry{key: 79, advertisedMin: 1, min: 1, max: 2, handle: handleShareAcknowledge})
}

// shareAckBatches converts a partition's acknowledgement batches; v1
// has no renew type.
func shareAckBatches(version int16, n int, at func(int) (first, last int64, types []int8)) ([]share.AckBatch, error) {
	out := make([]share.AckBatch, 0, n)
	for i := range n {
		first, last, types := at(i)
		b := share.AckBatch{First: first, Last: last, Types: make([]share.AckType, len(types))}
		for j, t := range types {
			if t == int8(share.AckRenew) && version < 2 {
				return nil, kerr.InvalidRequest
			}
			b.Types[j] = share.AckType(t)
		}
		out = append(out, b)
	}
	return out, nil
}

// sharePartLookup resolves a partition of a share request: the topic name
// (UNKNOWN_TOPIC_ID), READ on it, and the replica here.
type sharePartLookup struct {
	rc       *request
	img      *metadata.Image
	readable map[[16]byte]bool
}

func (l *sharePartLookup) resolve(ctx context.Context, id sharePartitionID) (string, *replica.Partition, error) {
	t, ok := l.img.TopicByID(id.topicID)
	if !ok {
		return "", nil, kerr.UnknownTopicID
	}
	ok, seen := l.readable[id.topicID]
	if !seen {
		ok = l.rc.authorize(opRead, resTopic, t.Name)
		l.readable[id.topicID] = ok
	}
	if !ok {
		return t.Name, nil, kerr.TopicAuthorizationFailed
	}
	var rp *replica.Partition
	srv := l.rc.conn.srv
	err := srv.onPartition(ctx, l.rc, t.Name, id.partition, func(p *replica.Partition) error {
		if leader, _ := p.Leader(); leader != srv.nodeID {
			return errNotLeaderHere(p)
		}
		rp = p
		return nil
	})
	return t.Name, rp, err
}

// shareOut collects a share answer's partitions, by topic in first-seen
// order.
type shareOut struct {
	order []sharePartitionID
	parts map[sharePartitionID]*kmsg.ShareFetchResponseTopicPartition
}

func (o *shareOut) get(id sharePartitionID) *kmsg.ShareFetchResponseTopicPartition {
	if p, ok := o.parts[id]; ok {
		return p
	}
	p := kmsg.NewShareFetchResponseTopicPartition()
	p.Partition = id.partition
	p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = -1, -1
	o.parts[id] = &p
	o.order = append(o.order, id)
	return &p
}

func (m *shareManager) releaseSession(s *shareSession) {
	if s == nil {
		return
	}
	for _, id := range s.parts {
		m.release(s.key.group, s.key.member, id.topicID, id.partition)
	}
}

// connClosed ends the share sessions of a closed connection.
func (m *shareManager) connClosed(conn uint64) {
	for _, s := range m.sessions.dropConn(conn) {
		m.releaseSession(s)
	}
}

// shareRequestRefused is the check ShareFetch and ShareAcknowledge share:
// share.version finalized, a group and member named, READ on the group.
func shareRequestRefused(rc *request, group, member string) int16 {
	if e := shareGroupsDisabled(rc); e != nil {
		return e.Code
	}
	switch {
	case group == "" || member == "":
		return kerr.InvalidRequest.Code
	case !rc.authorize(opRead, resGroup, group):
		return kerr.GroupAuthorizationFailed.Code
	}
	return 0
}

func handleShareFetch(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ShareFetchRequest)
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	srv := rc.conn.srv
	m := srv.shares
	group, member := derefOr(req.GroupID, ""), derefOr(req.MemberID, "")
	if resp.ErrorCode = shareRequestRefused(rc, group, member); resp.ErrorCode != 0 {
		return resp, nil
	}
	// A renew-only request (KIP-1222) carries acknowledgements and no
	// fetch: its fetch sizes are 0 and each partition it names has
	// acknowledgements, or it is INVALID_REQUEST (as Kafka 4.2); it
	// acquires nothing.
	renewOnly := req.Version >= 2 && req.IsRenewAck
	if renewOnly {
		bad := req.MaxBytes != 0 || req.MinBytes != 0 || req.MaxRecords != 0 || req.MaxWaitMillis != 0
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				bad = bad || len(p.AcknowledgementBatches) == 0
			}
		}
		if bad {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp, nil
		}
	}
	img := srv.image()
	gs := m.settings(img, group)
	resp.AcquisitionLockTimeoutMillis = int32(gs.cfg.LockDuration.Milliseconds())
	step, err := m.sessions.step(group, member, req.ShareSessionEpoch, rc.conn.id, true)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	m.releaseSession(step.replaced)
	out := &shareOut{parts: map[sharePartitionID]*kmsg.ShareFetchResponseTopicPartition{}}
	look := &sharePartLookup{rc: rc, img: img, readable: map[[16]byte]bool{}}

	// The ordered part: the session's partitions and the acknowledgements.
	if step.closed == nil {
		var add, forget []sharePartitionID
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				add = append(add, sharePartitionID{t.TopicID, p.Partition})
			}
		}
		for _, f := range req.ForgottenTopicsData {
			for _, p := range f.Partitions {
				forget = append(forget, sharePartitionID{f.TopicID, p})
			}
		}
		m.sessions.change(step.s, add, forget)
	}
	type pendingAck struct {
		id  sharePartitionID
		res ackResult
	}
	var acks []pendingAck
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if len(p.AcknowledgementBatches) == 0 {
				continue
			}
			id := sharePartitionID{t.TopicID, p.Partition}
			batches, err := shareAckBatches(req.Version, len(p.AcknowledgementBatches), func(i int) (int64, int64, []int8) {
				b := p.AcknowledgementBatches[i]
				return b.FirstOffset, b.LastOffset, b.AcknowledgeTypes
			})
			if err == nil && req.ShareSessionEpoch == 0 {
				err = kerr.InvalidRequest // nothing is acquired before the session
			}
			var rp *replica.Partition
			if err == nil {
				_, rp, err = look.resolve(ctx, id)
			}
			if err != nil {
				acks = append(acks, pendingAck{id, ackResult{err: err}})
				continue
			}
			acks = append(acks, pendingAck{id, m.acknowledge(img, group, member, rp, batches)})
		}
	}
	if step.closed != nil {
		m.releaseSession(step.closed)
	}
	rc.release()

	// The acknowledgements' writes are waited for after the acquisitions
	// are submitted: a share-partition's acknowledgements and the
	// delivery counts its fetch raises then usually share one write.
	var got []acquiredWrite
	if step.closed == nil && !renewOnly {
		got = srv.shareFetchRecords(ctx, rc, req, m, step.s, look, out, group, member)
	}
	for _, a := range acks {
		p := out.get(a.id)
		if err := a.res.wait(ctx); err != nil {
			p.AcknowledgeErrorCode = errorCode(err)
			srv.shareLeaderHint(img, rc, look, a.id, err, &p.CurrentLeader.LeaderID, &p.CurrentLeader.LeaderEpoch)
		}
	}
	for _, g := range got {
		if err := (ackResult{done: g.done}).wait(ctx); err != nil {
			// Records whose delivery counts are not durable are not
			// handed out: a deposed leader's acquisitions are void, and
			// the new leader delivers them with the counts it loads.
			p := out.get(g.id)
			p.Records, p.AcquiredRecords = nil, nil
			p.ErrorCode = errorCode(err)
			msg := err.Error()
			p.ErrorMessage = &msg
			srv.shareLeaderHint(img, rc, look, g.id, err, &p.CurrentLeader.LeaderID, &p.CurrentLeader.LeaderEpoch)
		}
	}

	hints := map[int32]bool{}
	topicAt := map[[16]byte]int{}
	for _, id := range out.order {
		p := out.parts[id]
		if p.CurrentLeader.LeaderID >= 0 {
			hints[p.CurrentLeader.LeaderID] = true
		}
		ti, ok := topicAt[id.topicID]
		if !ok {
			ti = len(resp.Topics)
			topicAt[id.topicID] = ti
			rt := kmsg.NewShareFetchResponseTopic()
			rt.TopicID = id.topicID
			resp.Topics = append(resp.Topics, rt)
		}
		resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, *p)
	}
	for _, pb := range produceEndpoints(img, hints, rc.conn.listener) {
		e := kmsg.NewShareFetchResponseNodeEndpoint()
		e.NodeID, e.Host, e.Port, e.Rack = pb.NodeID, pb.Host, pb.Port, pb.Rack
		resp.NodeEndpoints = append(resp.NodeEndpoints, e)
	}
	return resp, nil
}

// shareLeaderHint names the partition's leader for an error that asks the
// client to look for it.
func (s *Server) shareLeaderHint(img *metadata.Image, rc *request, look *sharePartLookup, id sharePartitionID, err error, leaderID, leaderEpoch *int32) {
	if !wantsLeaderHint(errorCode(err)) {
		return
	}
	t, ok := img.TopicByID(id.topicID)
	if !ok {
		return
	}
	if h, ok := leaderOf(img, t.Name, id.partition, rc.conn.listener); ok {
		*leaderID, *leaderEpoch = h.leader, h.epoch
	}
}

// acquiredWrite is the write a partition's acquisition waits for.
type acquiredWrite struct {
	id   sharePartitionID
	done <-chan error
}

// shareFetchRecords acquires records for the member from every partition
// of its session, waiting up to MaxWaitMillis while there are none. It
// returns the writes that make the acquisitions durable, for the caller
// to wait on before answering.
func (s *Server) shareFetchRecords(ctx context.Context, rc *request, req *kmsg.ShareFetchRequest, m *shareManager, sess *shareSession,
	look *sharePartLookup, out *shareOut, group, member string) (writes []acquiredWrite) {
	budget := int(req.MaxRecords)
	if budget <= 0 {
		budget = 500
	}
	bytesLeft := int(req.MaxBytes)
	if bytesLeft <= 0 {
		bytesLeft = 1 << 30
	}
	mode := share.BatchOptimized
	if req.Version >= 2 && req.ShareAcquireMode == 1 {
		mode = share.RecordLimit
	}
	deadline := time.Now().Add(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond)
	failed := map[sharePartitionID]bool{}
	for {
		var live []*replica.Partition
		got, errs := 0, 0
		for _, id := range m.sessions.snapshot(sess) {
			if failed[id] {
				continue
			}
			_, rp, err := look.resolve(ctx, id)
			if err == nil && budget > 0 && bytesLeft > 0 {
				var a acquired
				a, err = m.acquire(look.img, group, member, rp, budget, bytesLeft, mode)
				if err == nil && a.n > 0 {
					p := out.get(id)
					p.Records = append(p.Records, a.records...)
					for _, r := range a.ranges {
						ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
						ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = r.First, r.Last, r.DeliveryCount
						p.AcquiredRecords = append(p.AcquiredRecords, ar)
					}
					if a.done != nil {
						writes = append(writes, acquiredWrite{id, a.done})
					}
					budget -= a.n
					bytesLeft -= len(a.records)
					got += a.n
					s.metrics.TopicFetched(rp.Topic(), int64(len(a.records)))
				}
			}
			if err != nil {
				p := out.get(id)
				p.ErrorCode = errorCode(err)
				msg := err.Error()
				p.ErrorMessage = &msg
				s.shareLeaderHint(look.img, rc, look, id, err, &p.CurrentLeader.LeaderID, &p.CurrentLeader.LeaderEpoch)
				failed[id] = true
				errs++
				continue
			}
			if rp != nil {
				live = append(live, rp)
			}
		}
		wait := time.Until(deadline)
		if got > 0 || errs > 0 || wait <= 0 || len(live) == 0 || ctx.Err() != nil {
			return writes
		}
		// Wait for new records (the delayed-fetch purgatory, woken by
		// appends and HW moves) or, at most 100 ms, for held records to
		// come back (acknowledged as released, or their locks expired).
		fr := replica.FetchRequest{ReplicaID: -1, MaxWait: min(wait, 100*time.Millisecond), MinBytes: 1, MaxBytes: 1}
		for _, rp := range live {
			fr.Parts = append(fr.Parts, replica.FetchPartition{Topic: rp.Topic(), Partition: rp.Index(),
				Offset: rp.Log().HighWatermark(), MaxBytes: 1, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, KnownHighWatermark: -1})
		}
		if s.deps.Replicas == nil {
			return writes
		}
		s.deps.Replicas.Fetch(ctx, fr)
	}
}

func handleShareAcknowledge(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ShareAcknowledgeRequest)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	srv := rc.conn.srv
	m := srv.shares
	group, member := derefOr(req.GroupID, ""), derefOr(req.MemberID, "")
	if resp.ErrorCode = shareRequestRefused(rc, group, member); resp.ErrorCode != 0 {
		return resp, nil
	}
	img := srv.image()
	if req.Version >= 2 {
		resp.AcquisitionLockTimeoutMillis = int32(m.settings(img, group).cfg.LockDuration.Milliseconds())
	}
	step, err := m.sessions.step(group, member, req.ShareSessionEpoch, rc.conn.id, false)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	look := &sharePartLookup{rc: rc, img: img, readable: map[[16]byte]bool{}}
	type pendingAck struct {
		ti, pi int
		res    ackResult
	}
	var acks []pendingAck
	for ti, t := range req.Topics {
		rt := kmsg.NewShareAcknowledgeResponseTopic()
		rt.TopicID = t.TopicID
		for pi, p := range t.Partitions {
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition = p.Partition
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
			rt.Partitions = append(rt.Partitions, rp)
			id := sharePartitionID{t.TopicID, p.Partition}
			batches, err := shareAckBatches(req.Version, len(p.AcknowledgementBatches), func(i int) (int64, int64, []int8) {
				b := p.AcknowledgementBatches[i]
				return b.FirstOffset, b.LastOffset, b.AcknowledgeTypes
			})
			var part *replica.Partition
			if err == nil {
				_, part, err = look.resolve(ctx, id)
			}
			if err != nil {
				acks = append(acks, pendingAck{ti, pi, ackResult{err: err}})
				continue
			}
			acks = append(acks, pendingAck{ti, pi, m.acknowledge(img, group, member, part, batches)})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if step.closed != nil {
		m.releaseSession(step.closed)
	}
	rc.release()
	hints := map[int32]bool{}
	for _, a := range acks {
		p := &resp.Topics[a.ti].Partitions[a.pi]
		if err := a.res.wait(ctx); err != nil {
			p.ErrorCode = errorCode(err)
			msg := err.Error()
			p.ErrorMessage = &msg
			srv.shareLeaderHint(img, rc, look, sharePartitionID{resp.Topics[a.ti].TopicID, p.Partition}, err, &p.CurrentLeader.LeaderID, &p.CurrentLeader.LeaderEpoch)
			if p.CurrentLeader.LeaderID >= 0 {
				hints[p.CurrentLeader.LeaderID] = true
			}
		}
	}
	for _, pb := range produceEndpoints(img, hints, rc.conn.listener) {
		e := kmsg.NewShareAcknowledgeResponseNodeEndpoint()
		e.NodeID, e.Host, e.Port, e.Rack = pb.NodeID, pb.Host, pb.Port, pb.Rack
		resp.NodeEndpoints = append(resp.NodeEndpoints, e)
	}
	return resp, nil
}
