package broker

// JoinGroup (key 11): v0-v9, as Kafka 4.1 (which re-added v0 and v1 for
// old clients; segmentio/kafka-go sends v1).
//
// Behaviour: the group state machine in broker/group. The request is queued
// on the group's loop and the connection released, so the answer (which
// waits for the rebalance) does not hold up requests behind it except in
// the response order Kafka keeps.
//
// Version notes:
//   - v0: no rebalance timeout (the session timeout serves for both).
//   - v4+: KIP-394, a new dynamic member first gets MEMBER_ID_REQUIRED with
//     its id; never below v4 (clients of v0-v3 cannot complete it).
//   - v5+: static membership (group.instance.id, KIP-345).
//   - v6 flexible; v7 ProtocolType in the answer; v8 Reason (logged by
//     Kafka, ignored here); v9 SkipAssignment (KIP-814).

import (
	"context"
	"time"

	"github.com/raftka/raftka/broker/group"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{key: 11, advertisedMin: 0, min: 0, max: 9, handle: handleJoinGroup})
}

func handleJoinGroup(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.JoinGroupRequest)
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	fill := func(res group.JoinResult) (kmsg.Response, error) {
		resp.ErrorCode, resp.Generation, resp.LeaderID, resp.MemberID = res.ErrorCode, res.Generation, res.Leader, res.MemberID
		resp.SkipAssignment = res.SkipAssignment
		if req.Version >= 7 {
			// Nullable from v7: null until a generation exists.
			if res.ProtocolType != "" && res.ErrorCode == 0 {
				resp.ProtocolType = kmsg.StringPtr(res.ProtocolType)
			}
			if res.Protocol != "" && res.ErrorCode == 0 {
				resp.Protocol = kmsg.StringPtr(res.Protocol)
			}
		} else {
			resp.Protocol = kmsg.StringPtr(res.Protocol)
		}
		for _, m := range res.Members {
			rm := kmsg.NewJoinGroupResponseMember()
			rm.MemberID, rm.ProtocolMetadata = m.MemberID, m.Metadata
			if m.InstanceID != "" {
				rm.InstanceID = kmsg.StringPtr(m.InstanceID)
			}
			if rm.ProtocolMetadata == nil {
				rm.ProtocolMetadata = []byte{}
			}
			resp.Members = append(resp.Members, rm)
		}
		return resp, nil
	}
	groups := groupsOf(rc)
	switch {
	case !rc.authorize(opRead, resGroup, req.Group):
		return fill(group.JoinResult{ErrorCode: kerr.GroupAuthorizationFailed.Code, MemberID: req.MemberID, Generation: -1})
	case groups == nil:
		return fill(group.JoinResult{ErrorCode: kerr.CoordinatorNotAvailable.Code, MemberID: req.MemberID, Generation: -1})
	case req.Group == "":
		return fill(group.JoinResult{ErrorCode: kerr.InvalidGroupID.Code, MemberID: req.MemberID, Generation: -1})
	case isShareGroup(rc, req.Group):
		return fill(group.JoinResult{ErrorCode: kerr.InconsistentGroupProtocol.Code, MemberID: req.MemberID, Generation: -1})
	}
	jr := group.JoinRequest{
		MemberID: req.MemberID, InstanceID: derefOr(req.InstanceID, ""),
		ClientID: rc.clientID, ClientHost: clientHost(rc), ProtocolType: req.ProtocolType,
		SessionTimeout:         time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		RebalanceTimeout:       time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
		RequireKnownMemberID:   req.Version >= 4,
		SupportsSkipAssignment: req.Version >= 9,
	}
	if req.Version == 0 {
		jr.RebalanceTimeout = jr.SessionTimeout
	}
	for _, p := range req.Protocols {
		jr.Protocols = append(jr.Protocols, group.Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	ch := groups.Join(req.Group, jr)
	rc.release()
	select {
	case res := <-ch:
		return fill(res)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
