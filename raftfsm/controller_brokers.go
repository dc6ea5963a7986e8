package raftfsm

import (
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Broker lifecycle, as KRaft's BrokerHeartbeatManager and
// ReplicationControlManager do it: a broker registers (new epoch, fenced),
// heartbeats until it has applied its own registration and is unfenced,
// loses its leaderships when its session expires, and leaves leaderships and
// ISRs behind in a controlled shutdown before it is told to stop, fenced in
// the entry that tells it.

func (c *controller) leaseOf(id int32, now time.Time) *lease {
	l := c.leases[id]
	if l == nil {
		l = &lease{lastSeen: now}
		c.leases[id] = l
	}
	return l
}

func decideRegister(req *kmsg.BrokerRegistrationRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
		resp.BrokerEpoch = -1
		if req.ClusterID != img.ClusterID() {
			resp.ErrorCode = kerr.InconsistentClusterID.Code
			return decision{resp: resp}
		}
		feats := registrationFeatures(req)
		if err := metadata.CheckBrokerFeatures(img, feats); err != nil {
			// BrokerRegistrationResponse has no message field: the
			// controller's log says why.
			c.n.log.Warn().Int32("broker", req.BrokerID).Err(err).Msg("refused a broker registration")
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return decision{resp: resp}
		}
		old, registered := img.Broker(req.BrokerID)
		if registered && old.IncarnationID != req.IncarnationID && !old.Fenced {
			// Another live process holds this id: refuse until its session
			// expires, as Kafka does (DUPLICATE_BROKER_REGISTRATION).
			if l := c.leases[req.BrokerID]; l != nil && now.Sub(l.lastSeen) < c.n.cfg.SessionTimeout {
				resp.ErrorCode = kerr.DuplicateBrokerRegistration.Code
				return decision{resp: resp}
			}
		}
		// The epoch is (a lower bound of) the Raft index of this entry:
		// the controller loop is the only writer of command entries, so the
		// entry lands after LastIndex. It grows across registrations.
		epoch := int64(c.n.raft.LastIndex() + 1)
		if registered && epoch <= old.Epoch {
			epoch = old.Epoch + 1
		}
		rec := &metadata.RegisterBroker{
			BrokerID:      req.BrokerID,
			IncarnationID: req.IncarnationID,
			BrokerEpoch:   epoch,
			Rack:          deref(req.Rack),
			Fenced:        true,
		}
		for _, l := range req.Listeners {
			rec.Endpoints = append(rec.Endpoints, metadata.Endpoint{
				Listener: l.Name, Host: l.Host, Port: l.Port, SecurityProtocol: l.SecurityProtocol,
			})
		}
		recs := []metadata.Record{rec}
		// A re-registration replaces the old one fenced; the partitions it
		// led under its old epoch need a leader now.
		if registered && !old.Fenced {
			after, _ := img.Apply(recs)
			recs = append(recs, evacuate(after, req.BrokerID, metadata.ReasonBrokerFenced, c.unclean(after))...)
		}
		resp.BrokerEpoch = epoch
		id := req.BrokerID
		return decision{recs: recs, resp: resp, after: func(index uint64) {
			l := c.leaseOf(id, now)
			l.lastSeen, l.heard = now, now
			l.regIndex = index
			c.features[id] = feats
		}}
	}
}

func decideHeartbeat(req *kmsg.BrokerHeartbeatRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
		resp.IsFenced = true
		b, code := brokerAtEpoch(img, req.BrokerID, req.BrokerEpoch)
		if code != 0 {
			resp.ErrorCode = code
			return decision{resp: resp}
		}
		l := c.leaseOf(b.ID, now)
		l.lastSeen, l.heard = now, now
		c.features[b.ID] = heartbeatFeatures(req)
		for _, id := range suspectedBrokers(req) {
			if id != b.ID {
				c.suspect(img, id, now, eventProbeSpacing, "a follower lost its connection to it")
			}
		}
		need := l.regIndex
		if need == 0 {
			need = c.startIndex
		}
		caughtUp := req.CurrentMetadataOffset >= 0 && uint64(req.CurrentMetadataOffset) >= need
		resp.IsCaughtUp = caughtUp

		var recs []metadata.Record
		switch {
		case req.WantShutdown && b.Fenced:
			// A fenced broker leads nothing: it may stop at once.
		case req.WantShutdown && req.WantFence:
			// Kafka grants SHUTDOWN_NOW at once to a broker that asks for
			// both: fenced, with its leaderships moved, in this batch.
			recs = append(recs, &metadata.FenceBroker{BrokerID: b.ID, BrokerEpoch: b.Epoch})
			next, _ := img.Apply(recs)
			recs = append(recs, evacuate(next, b.ID, metadata.ReasonBrokerFenced, c.unclean(next))...)
		case req.WantShutdown:
			if !b.InControlledShutdown {
				recs = append(recs, &metadata.BrokerShutdown{BrokerID: b.ID, BrokerEpoch: b.Epoch, InControlledShutdown: true})
			}
			next, _ := img.Apply(recs)
			recs = append(recs, evacuate(next, b.ID, metadata.ReasonControlledShutdown, c.unclean(next))...)
		case req.WantFence && !b.Fenced:
			recs = append(recs, &metadata.FenceBroker{BrokerID: b.ID, BrokerEpoch: b.Epoch})
			next, _ := img.Apply(recs)
			recs = append(recs, evacuate(next, b.ID, metadata.ReasonBrokerFenced, c.unclean(next))...)
		case !req.WantFence && b.Fenced && caughtUp && !b.InControlledShutdown:
			// A broker fenced at the end of its controlled shutdown keeps
			// the mark until it registers again: that epoch belongs to a
			// process that was told to exit, so a heartbeat it sent late
			// must not bring it back (it could not lead anyway while
			// marked; only a new registration clears the mark).
			recs = append(recs, &metadata.UnfenceBroker{BrokerID: b.ID, BrokerEpoch: b.Epoch})
			next, _ := img.Apply(recs)
			recs = append(recs, electLeaderless(next, c.unclean(next))...)
		}
		after := img
		if len(recs) > 0 {
			after, _ = img.Apply(recs)
		}
		if refs := offlineReplicas(req); len(refs) > 0 || len(b.OfflineReplicas) > 0 {
			if cur, ok := after.Broker(b.ID); ok && cur.Epoch == b.Epoch {
				if moves := offlineReplicaChanges(after, cur, refs, c.unclean(after)); len(moves) > 0 {
					c.n.log.Warn().Int32("broker", b.ID).Int("replicas", len(refs)).Msg("broker reports replicas in failed log dirs: moving their leaderships and ISR membership")
					after, _ = after.Apply(moves)
					recs = append(recs, moves...)
				}
			}
		}
		nb, _ := after.Broker(b.ID)
		resp.ShouldShutdown = req.WantShutdown && (nb.Fenced || (nb.InControlledShutdown && !leadsAnything(after, b.ID)))
		if resp.ShouldShutdown && !nb.Fenced {
			// Kafka's SHUTDOWN_NOW is a fenced state: the answer that lets
			// the broker exit comes with its fencing in the same entry, so
			// the process that replaces it (a new incarnation) may register
			// at once instead of meeting DUPLICATE_BROKER_REGISTRATION
			// until the old session expires. It leads nothing by now and
			// has left every ISR it was not the last member of; those it
			// was keep it (the partition is already leaderless). evacuate
			// then finds nothing to change, since the shutdown mark already
			// made the broker unusable; it runs anyway, as Kafka's
			// handleBrokerFenced does, so the fence never rests on that.
			fence := []metadata.Record{&metadata.FenceBroker{BrokerID: b.ID, BrokerEpoch: b.Epoch}}
			after, _ = after.Apply(fence)
			recs = append(recs, fence...)
			if moves := evacuate(after, b.ID, metadata.ReasonBrokerFenced, c.unclean(after)); len(moves) > 0 {
				after, _ = after.Apply(moves)
				recs = append(recs, moves...)
			}
			nb, _ = after.Broker(b.ID)
		}
		resp.IsFenced = nb.Fenced
		return decision{recs: recs, resp: resp}
	}
}

// expireSessions fences every unfenced broker whose last heartbeat is older
// than the session timeout and moves its leaderships to the live ISR, all in
// the batch being committed.
func (c *controller) expireSessions(img *metadata.Image, now time.Time) []metadata.Record {
	var recs []metadata.Record
	for _, b := range img.Brokers() {
		if b.Fenced {
			continue
		}
		l := c.leaseOf(b.ID, now)
		if now.Sub(l.lastSeen) <= c.n.cfg.SessionTimeout {
			if c.watch.overdue(l.lastSeen, now) {
				c.suspect(img, b.ID, now, c.watch.overdueSpacing(), "its heartbeat is overdue")
			}
			continue
		}
		c.n.log.Warn().Int32("broker", b.ID).Dur("since_heartbeat", now.Sub(l.lastSeen)).Msg("broker session expired: fencing")
		fence := []metadata.Record{&metadata.FenceBroker{BrokerID: b.ID, BrokerEpoch: b.Epoch}}
		img, _ = img.Apply(fence)
		moves := evacuate(img, b.ID, metadata.ReasonBrokerFenced, c.unclean(img))
		if len(moves) > 0 {
			img, _ = img.Apply(moves)
		}
		recs = append(recs, fence...)
		recs = append(recs, moves...)
	}
	return recs
}

func decideUnregister(req *kmsg.UnregisterBrokerRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
		b, ok := img.Broker(req.BrokerID)
		if !ok {
			resp.ErrorCode = kerr.BrokerIDNotRegistered.Code
			return decision{resp: resp}
		}
		var recs []metadata.Record
		if !b.Fenced {
			recs = append(recs, &metadata.FenceBroker{BrokerID: b.ID, BrokerEpoch: b.Epoch})
		}
		next, _ := img.Apply(recs)
		recs = append(recs, evacuate(next, b.ID, metadata.ReasonBrokerFenced, c.unclean(next))...)
		recs = append(recs, &metadata.UnregisterBroker{BrokerID: b.ID, BrokerEpoch: b.Epoch})
		id := b.ID
		return decision{recs: recs, resp: resp, after: func(uint64) { delete(c.leases, id); delete(c.features, id); c.watch.forget(id) }}
	}
}

func decideAllocateProducerIDs(req *kmsg.AllocateProducerIDsRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
		b, code := brokerAtEpoch(img, req.BrokerID, req.BrokerEpoch)
		if code != 0 {
			resp.ErrorCode = code
			return decision{resp: resp}
		}
		start := img.NextProducerID()
		resp.ProducerIDStart = start
		resp.ProducerIDLen = ProducerIDBlockSize
		return decision{resp: resp, recs: []metadata.Record{&metadata.ProducerIds{
			BrokerID: b.ID, BrokerEpoch: b.Epoch, NextProducerID: start + ProducerIDBlockSize,
		}}}
	}
}

// ProducerIDBlockSize is how many producer ids one AllocateProducerIds
// hands out, as in Kafka.
const ProducerIDBlockSize = 1000

func leadsAnything(img *metadata.Image, id int32) bool {
	for _, t := range img.Topics() {
		for _, p := range t.Partitions {
			if p.Leader == id {
				return true
			}
		}
	}
	return false
}

// brokerAtEpoch returns broker id's registration, or the error code for a
// request that names an unregistered broker or a stale epoch.
func brokerAtEpoch(img *metadata.Image, id int32, epoch int64) (metadata.BrokerRegistration, int16) {
	b, ok := img.Broker(id)
	switch {
	case !ok:
		return b, kerr.BrokerIDNotRegistered.Code
	case b.Epoch != epoch:
		return b, kerr.StaleBrokerEpoch.Code
	}
	return b, 0
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
