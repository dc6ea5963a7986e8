package raftfsm

import (
	"bufio"
	"context"
	"errors"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rpcTimeout bounds one controller operation on the server side, forwarding
// included.
const rpcTimeout = 30 * time.Second

// serveConn answers one RPC connection of principal: frames are read and
// answered in order. A frame that does not parse closes the connection
// after a log line; nothing else is affected. With an Authorizer, a
// principal without CLUSTER_ACTION on the cluster is answered
// CLUSTER_AUTHORIZATION_FAILED on every request, as Kafka's ControllerApis
// answer a registration, heartbeat or AlterPartition from a non-broker.
func (n *Node) serveConn(c net.Conn, principal string) {
	select {
	case <-n.rpcReady:
	case <-n.ctx.Done(): // Start failed or the node is shutting down
		return
	}
	r := bufio.NewReader(c)
	var out []byte
	// broker is the broker that heartbeated on this connection (-1 if
	// none): when the connection ends, its process may have died with it
	// (liveness.go).
	broker := int32(-1)
	for {
		frame, err := readFrame(r)
		if err != nil {
			if broker >= 0 && n.ctx.Err() == nil {
				n.brokerConnLost(broker)
			}
			return
		}
		hdr, req, err := parseRequest(frame)
		if err != nil && hdr.key == 18 && hdr.version > maxAPIVersionsVersion {
			// A newer client's ApiVersions: answered, so it retries.
			req, err = kmsg.NewPtrApiVersionsRequest(), nil
		}
		if err != nil {
			n.log.Warn().Err(err).Str("remote", c.RemoteAddr().String()).Msg("bad controller rpc frame: closing connection")
			return
		}
		var resp kmsg.Response
		if _, ok := req.(*kmsg.ApiVersionsRequest); ok {
			// Any principal may ask, as on Kafka's controllers.
			resp = n.apiVersionsResponse(hdr.version)
		} else {
			run, trusted := req, n.cfg.Authorizer == nil || n.clusterAction(principal, remoteHost(c))
			var merge func(kmsg.Response)
			if !trusted {
				img, _ := n.pub.Current()
				run, resp, merge = n.authorizeAdmin(img, principal, remoteHost(c), req)
				if run == nil {
					n.log.Warn().Str("remote", c.RemoteAddr().String()).Str("principal", principal).Str("request", kmsg.NameForKey(req.Key())).
						Msg("controller rpc refused: the principal lacks the ACL Kafka's controller checks (CLUSTER_ACTION for brokers' requests)")
				}
			}
			if run != nil {
				// Only an authorized broker's own heartbeats name the broker
				// whose death this connection's close may prove (liveness.go).
				if hb, ok := req.(*kmsg.BrokerHeartbeatRequest); ok && trusted && hdr.clientID != forwardClientID {
					broker = hb.BrokerID
				}
				ctx, cancel := context.WithTimeout(n.ctx, rpcTimeout)
				resp = n.serve(ctx, hdr, run, principal, remoteHost(c))
				cancel()
				if merge != nil {
					merge(resp)
				}
			}
		}
		out = appendResponse(out[:0], hdr.correlationID, resp)
		_ = c.SetWriteDeadline(time.Now().Add(rpcTimeout))
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// clusterAction reports whether principal, from host, holds CLUSTER_ACTION
// on the cluster in this node's current image.
func (n *Node) clusterAction(principal, host string) bool {
	img, _ := n.pub.Current()
	return n.cfg.Authorizer.Authorize(img, principal, host, metadata.ACLOpClusterAction, metadata.ACLResourceCluster, metadata.ClusterResourceName)
}

// serve answers one authorized request: the reads of this node's own
// state here, the rest through handle.
func (n *Node) serve(ctx context.Context, hdr requestHeader, req kmsg.Request, principal, host string) kmsg.Response {
	switch r := req.(type) {
	case *kmsg.DescribeConfigsRequest:
		if resp := n.cfg.DescribeConfigs(ctx, principal, host, r); resp != nil {
			return resp
		}
		return errorResponse(req, kerr.RequestTimedOut.Code)
	case *kmsg.DescribeClusterRequest:
		return n.describeCluster(r, principal, host)
	case *kmsg.DescribeACLsRequest:
		return n.describeAcls(r)
	}
	return n.handle(ctx, hdr, req)
}

// handle answers one request: on the leader through the active controller,
// elsewhere by forwarding it to the leader once; a request that was already
// forwarded, or that finds no leader, gets NOT_CONTROLLER and the client
// retries.
func (n *Node) handle(ctx context.Context, hdr requestHeader, req kmsg.Request) kmsg.Response {
	d := n.decideFor(req)
	if d == nil {
		return errorResponse(req, kerr.UnsupportedVersion.Code)
	}
	if c := n.activeController(); c != nil {
		switch r := req.(type) {
		case *kmsg.AddRaftVoterRequest:
			if isNonvoterRequest(r) {
				return n.addNonvoter(r)
			}
			return n.addVoter(ctx, r)
		case *kmsg.RemoveRaftVoterRequest:
			return n.removeVoter(ctx, hdr, r)
		case *kmsg.UpdateRaftVoterRequest:
			return n.updateVoter(r)
		case *kmsg.DescribeQuorumRequest:
			return n.describeQuorum(ctx, r)
		}
		res := c.submit(ctx, d)
		if res.err != nil {
			resp := errorResponse(req, errCode(res.err))
			if errors.Is(res.err, metadata.ErrUnsupportedByMetadataVersion) {
				setErrorMessage(resp, res.err.Error())
			}
			return resp
		}
		if tags := respTags(res.resp); tags != nil {
			setIndexTag(tags, res.index)
		}
		return res.resp
	}
	leader := n.leaderAddr()
	if hdr.clientID == forwardClientID || leader == "" || leader == n.addr {
		return errorResponse(req, kerr.NotController.Code)
	}
	resp, err := n.pool.roundTrip(ctx, leader, forwardClientID, req)
	if err != nil {
		n.log.Debug().Err(err).Str("leader", leader).Msg("forwarding controller rpc failed")
		return errorResponse(req, kerr.NotController.Code)
	}
	return resp
}

// decideFor maps a request to its controller operation; nil for a request
// the controller listener does not serve.
func (n *Node) decideFor(req kmsg.Request) decideFunc {
	switch r := req.(type) {
	case *kmsg.BrokerRegistrationRequest:
		return decideRegister(r)
	case *kmsg.BrokerHeartbeatRequest:
		return decideHeartbeat(r)
	case *kmsg.UnregisterBrokerRequest:
		return decideUnregister(r)
	case *kmsg.CreateTopicsRequest:
		return decideCreateTopics(r, n.cfg.DefaultPartitions, n.cfg.DefaultReplicationFactor)
	case *kmsg.DeleteTopicsRequest:
		return decideDeleteTopics(r)
	case *kmsg.CreatePartitionsRequest:
		return decideCreatePartitions(r)
	case *kmsg.AlterConfigsRequest:
		return decideAlterConfigs(r)
	case *kmsg.IncrementalAlterConfigsRequest:
		return decideIncrementalAlterConfigs(r)
	case *kmsg.AlterPartitionRequest:
		return decideAlterPartition(r)
	case *kmsg.AllocateProducerIDsRequest:
		return decideAllocateProducerIDs(r)
	case *kmsg.ElectLeadersRequest:
		return decideElectLeaders(r)
	case *kmsg.AlterPartitionAssignmentsRequest:
		return decideAlterPartitionReassignments(r)
	case *kmsg.ListPartitionReassignmentsRequest:
		return decideListPartitionReassignments(r)
	case *kmsg.OffsetCommitRequest:
		if isDeleteOffsets(r) {
			return decideDeleteOffsets(r)
		}
		return decideCommitOffsets(r)
	case *kmsg.SyncGroupRequest:
		return decideGroupGeneration(r)
	case *kmsg.DeleteGroupsRequest:
		return decideDeleteGroups(r)
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		return decideAlterUserScramCredentials(r)
	case *kmsg.CreateACLsRequest:
		return decideCreateAcls(r)
	case *kmsg.DeleteACLsRequest:
		return decideDeleteAcls(r)
	case *kmsg.AlterClientQuotasRequest:
		return decideAlterClientQuotas(r)
	case *kmsg.EnvelopeRequest:
		return decideEnvelope(r)
	case *kmsg.UpdateFeaturesRequest:
		return decideUpdateFeatures(r)
	case *kmsg.DescribeConfigsRequest:
		if n.cfg.DescribeConfigs == nil {
			return nil
		}
		return func(*controller, *metadata.Image, time.Time) decision { return decision{} }
	case *kmsg.AddRaftVoterRequest, *kmsg.RemoveRaftVoterRequest, *kmsg.UpdateRaftVoterRequest, *kmsg.DescribeQuorumRequest,
		*kmsg.DescribeClusterRequest, *kmsg.DescribeACLsRequest:
		// Answered outside the loop (a Raft configuration change, reads of
		// Raft state or the image); the non-nil func only marks them as
		// served.
		return func(*controller, *metadata.Image, time.Time) decision { return decision{} }
	}
	return nil
}

// addNonvoter adds a broker-only node as a Raft non-voter after checking
// that it belongs to this cluster.
func (n *Node) addNonvoter(r *kmsg.AddRaftVoterRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.AddRaftVoterResponse)
	img, _ := n.pub.Latest()
	if r.ClusterID == nil || *r.ClusterID != img.ClusterID() {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return resp
	}
	if len(r.Listeners) == 0 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = kmsg.StringPtr("no listener to reach the node on")
		return resp
	}
	l := r.Listeners[0]
	addr := net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
	f := n.raft.AddNonvoter(raft.ServerID(strconv.Itoa(int(r.VoterID))), raft.ServerAddress(addr), 0, 10*time.Second)
	if err := f.Error(); err != nil {
		resp.ErrorCode = kerr.NotController.Code
		if !errors.Is(err, raft.ErrNotLeader) {
			resp.ErrorCode = kerr.RequestTimedOut.Code
		}
		resp.ErrorMessage = kmsg.StringPtr(err.Error())
		return resp
	}
	n.log.Info().Int32("node", r.VoterID).Str("addr", addr).Msg("added raft non-voter")
	return resp
}

// isNonvoterRequest reports whether r is a node's own request to join as
// a Raft non-voter (NonvoterTag), not an operator's AddRaftVoter.
func isNonvoterRequest(r *kmsg.AddRaftVoterRequest) bool {
	nonvoter := false
	r.UnknownTags.Each(func(k uint32, v []byte) {
		if k == NonvoterTag && len(v) == 1 && v[0] == 1 {
			nonvoter = true
		}
	})
	return nonvoter
}

// respTags returns the tagged fields of a flexible controller response.
func respTags(resp kmsg.Response) *kmsg.Tags {
	if !resp.IsFlexible() {
		return nil
	}
	switch r := resp.(type) {
	case *kmsg.BrokerRegistrationResponse:
		return &r.UnknownTags
	case *kmsg.BrokerHeartbeatResponse:
		return &r.UnknownTags
	case *kmsg.UnregisterBrokerResponse:
		return &r.UnknownTags
	case *kmsg.CreateTopicsResponse:
		return &r.UnknownTags
	case *kmsg.DeleteTopicsResponse:
		return &r.UnknownTags
	case *kmsg.CreatePartitionsResponse:
		return &r.UnknownTags
	case *kmsg.AlterConfigsResponse:
		return &r.UnknownTags
	case *kmsg.IncrementalAlterConfigsResponse:
		return &r.UnknownTags
	case *kmsg.AlterPartitionResponse:
		return &r.UnknownTags
	case *kmsg.AllocateProducerIDsResponse:
		return &r.UnknownTags
	case *kmsg.ElectLeadersResponse:
		return &r.UnknownTags
	case *kmsg.AlterPartitionAssignmentsResponse:
		return &r.UnknownTags
	case *kmsg.ListPartitionReassignmentsResponse:
		return &r.UnknownTags
	case *kmsg.OffsetCommitResponse:
		return &r.UnknownTags
	case *kmsg.SyncGroupResponse:
		return &r.UnknownTags
	case *kmsg.DeleteGroupsResponse:
		return &r.UnknownTags
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		return &r.UnknownTags
	case *kmsg.CreateACLsResponse:
		return &r.UnknownTags
	case *kmsg.DeleteACLsResponse:
		return &r.UnknownTags
	case *kmsg.AlterClientQuotasResponse:
		return &r.UnknownTags
	case *kmsg.EnvelopeResponse:
		return &r.UnknownTags
	case *kmsg.UpdateFeaturesResponse:
		return &r.UnknownTags
	}
	return nil
}

// errorResponse answers req with code everywhere the response has an error
// code: at the top level, or on every item the request named.
func errorResponse(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	switch r := req.(type) {
	case *kmsg.BrokerRegistrationRequest:
		x := resp.(*kmsg.BrokerRegistrationResponse)
		x.ErrorCode, x.BrokerEpoch = code, -1
	case *kmsg.BrokerHeartbeatRequest:
		x := resp.(*kmsg.BrokerHeartbeatResponse)
		x.ErrorCode, x.IsFenced = code, true
	case *kmsg.UnregisterBrokerRequest:
		resp.(*kmsg.UnregisterBrokerResponse).ErrorCode = code
	case *kmsg.AllocateProducerIDsRequest:
		resp.(*kmsg.AllocateProducerIDsResponse).ErrorCode = code
	case *kmsg.AlterPartitionRequest:
		resp.(*kmsg.AlterPartitionResponse).ErrorCode = code
	case *kmsg.AddRaftVoterRequest:
		resp.(*kmsg.AddRaftVoterResponse).ErrorCode = code
	case *kmsg.RemoveRaftVoterRequest:
		resp.(*kmsg.RemoveRaftVoterResponse).ErrorCode = code
	case *kmsg.UpdateRaftVoterRequest:
		resp.(*kmsg.UpdateRaftVoterResponse).ErrorCode = code
	case *kmsg.DescribeQuorumRequest:
		resp.(*kmsg.DescribeQuorumResponse).ErrorCode = code
	case *kmsg.DescribeClusterRequest:
		x := resp.(*kmsg.DescribeClusterResponse)
		x.ErrorCode, x.EndpointType, x.ControllerID, x.ClusterAuthorizedOperations = code, 2, -1, math.MinInt32
	case *kmsg.DescribeACLsRequest:
		resp.(*kmsg.DescribeACLsResponse).ErrorCode = code
	case *kmsg.DescribeConfigsRequest:
		x := resp.(*kmsg.DescribeConfigsResponse)
		for _, res := range r.Resources {
			o := kmsg.NewDescribeConfigsResponseResource()
			o.ResourceType, o.ResourceName, o.ErrorCode = res.ResourceType, res.ResourceName, code
			o.Configs = []kmsg.DescribeConfigsResponseResourceConfig{}
			x.Resources = append(x.Resources, o)
		}
	case *kmsg.ElectLeadersRequest:
		resp.(*kmsg.ElectLeadersResponse).ErrorCode = code
	case *kmsg.AlterPartitionAssignmentsRequest:
		resp.(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode = code
	case *kmsg.ListPartitionReassignmentsRequest:
		resp.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode = code
	case *kmsg.CreateTopicsRequest:
		x := resp.(*kmsg.CreateTopicsResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, code
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
			x.Topics = append(x.Topics, rt)
		}
	case *kmsg.DeleteTopicsRequest:
		x := resp.(*kmsg.DeleteTopicsResponse)
		for _, name := range r.TopicNames {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = kmsg.StringPtr(name), code
			x.Topics = append(x.Topics, rt)
		}
		for _, t := range r.Topics {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, code
			x.Topics = append(x.Topics, rt)
		}
	case *kmsg.CreatePartitionsRequest:
		x := resp.(*kmsg.CreatePartitionsResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, code
			x.Topics = append(x.Topics, rt)
		}
	case *kmsg.AlterConfigsRequest:
		x := resp.(*kmsg.AlterConfigsResponse)
		for _, res := range r.Resources {
			o := kmsg.NewAlterConfigsResponseResource()
			o.ResourceType, o.ResourceName, o.ErrorCode = res.ResourceType, res.ResourceName, code
			x.Resources = append(x.Resources, o)
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		x := resp.(*kmsg.IncrementalAlterConfigsResponse)
		for _, res := range r.Resources {
			o := kmsg.NewIncrementalAlterConfigsResponseResource()
			o.ResourceType, o.ResourceName, o.ErrorCode = res.ResourceType, res.ResourceName, code
			x.Resources = append(x.Resources, o)
		}
	case *kmsg.OffsetCommitRequest:
		resp = offsetCommitAnswer(r, code)
	case *kmsg.SyncGroupRequest:
		resp.(*kmsg.SyncGroupResponse).ErrorCode = code
	case *kmsg.EnvelopeRequest:
		resp.(*kmsg.EnvelopeResponse).ErrorCode = code
	case *kmsg.UpdateFeaturesRequest:
		x := resp.(*kmsg.UpdateFeaturesResponse)
		x.ErrorCode = code
		if r.Version < 2 {
			for _, u := range r.FeatureUpdates {
				rr := kmsg.NewUpdateFeaturesResponseResult()
				rr.Feature, rr.ErrorCode = u.Feature, code
				x.Results = append(x.Results, rr)
			}
		}
	case *kmsg.DeleteGroupsRequest:
		x := resp.(*kmsg.DeleteGroupsResponse)
		for _, g := range r.Groups {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, code
			x.Groups = append(x.Groups, rg)
		}
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		x := resp.(*kmsg.AlterUserSCRAMCredentialsResponse)
		seen := map[string]bool{}
		add := func(name string) {
			if !seen[name] {
				seen[name] = true
				rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				rr.User, rr.ErrorCode = name, code
				x.Results = append(x.Results, rr)
			}
		}
		for _, d := range r.Deletions {
			add(d.Name)
		}
		for _, u := range r.Upsertions {
			add(u.Name)
		}
	case *kmsg.CreateACLsRequest:
		x := resp.(*kmsg.CreateACLsResponse)
		for range r.Creations {
			rr := kmsg.NewCreateACLsResponseResult()
			rr.ErrorCode = code
			x.Results = append(x.Results, rr)
		}
	case *kmsg.DeleteACLsRequest:
		x := resp.(*kmsg.DeleteACLsResponse)
		for range r.Filters {
			rr := kmsg.NewDeleteACLsResponseResult()
			rr.ErrorCode = code
			x.Results = append(x.Results, rr)
		}
	case *kmsg.AlterClientQuotasRequest:
		x := resp.(*kmsg.AlterClientQuotasResponse)
		for _, en := range r.Entries {
			rr := kmsg.NewAlterClientQuotasResponseEntry()
			rr.ErrorCode = code
			for _, e := range en.Entity {
				re := kmsg.NewAlterClientQuotasResponseEntryEntity()
				re.Type, re.Name = e.Type, e.Name
				rr.Entity = append(rr.Entity, re)
			}
			x.Entries = append(x.Entries, rr)
		}
	}
	resp.SetVersion(req.GetVersion())
	return resp
}

// setErrorMessage puts msg on every error message field of an error
// response (errorResponse's) that has one, so a client sees why.
func setErrorMessage(resp kmsg.Response, msg string) {
	m := kmsg.StringPtr(msg)
	switch x := resp.(type) {
	case *kmsg.CreateTopicsResponse:
		for i := range x.Topics {
			x.Topics[i].ErrorMessage = m
		}
	case *kmsg.DeleteTopicsResponse:
		for i := range x.Topics {
			x.Topics[i].ErrorMessage = m
		}
	case *kmsg.CreatePartitionsResponse:
		for i := range x.Topics {
			x.Topics[i].ErrorMessage = m
		}
	case *kmsg.AlterConfigsResponse:
		for i := range x.Resources {
			x.Resources[i].ErrorMessage = m
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for i := range x.Resources {
			x.Resources[i].ErrorMessage = m
		}
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		for i := range x.Results {
			x.Results[i].ErrorMessage = m
		}
	case *kmsg.CreateACLsResponse:
		for i := range x.Results {
			x.Results[i].ErrorMessage = m
		}
	case *kmsg.DeleteACLsResponse:
		for i := range x.Results {
			x.Results[i].ErrorMessage = m
		}
	case *kmsg.AlterClientQuotasResponse:
		for i := range x.Entries {
			x.Entries[i].ErrorMessage = m
		}
	case *kmsg.AlterPartitionAssignmentsResponse:
		x.ErrorMessage = m
	case *kmsg.ElectLeadersResponse:
		// ElectLeaders has messages per partition only, and none are
		// listed in an error answer.
	case *kmsg.UnregisterBrokerResponse:
		x.ErrorMessage = m
	case *kmsg.AddRaftVoterResponse:
		x.ErrorMessage = m
	case *kmsg.RemoveRaftVoterResponse:
		x.ErrorMessage = m
	case *kmsg.UpdateFeaturesResponse:
		x.ErrorMessage = m
		for i := range x.Results {
			x.Results[i].ErrorMessage = m
		}
	}
}
