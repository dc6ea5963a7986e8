package raftfsm

import (
	"math"
	"slices"
	"strconv"

	"github.com/hashicorp/raft"
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The controller listener's admin face (KIP-919): Kafka's admin tools
// started with --bootstrap-controller talk to the controllers directly,
// as Kafka 4.1's ControllerApis serve them. Brokers and controllers
// (principals with CLUSTER_ACTION on the cluster) are trusted as before:
// a broker forwards its clients' admin requests after its own checks.
// Anyone else is checked here, request by request, with the operation
// ControllerApis checks; the requests only brokers send (registration,
// heartbeats, AlterPartition, producer id blocks, raftka's group and
// offset records) stay CLUSTER_ACTION only.

// clusterOps is the operation on the cluster a principal without
// CLUSTER_ACTION needs for a request Kafka checks against the cluster
// resource alone. A request absent here and from resourceChecked is a
// broker's.
var clusterOps = map[int16]metadata.ACLOperation{
	29: metadata.ACLOpDescribe,     // DescribeAcls
	30: metadata.ACLOpAlter,        // CreateAcls
	31: metadata.ACLOpAlter,        // DeleteAcls
	43: metadata.ACLOpAlter,        // ElectLeaders
	45: metadata.ACLOpAlter,        // AlterPartitionReassignments
	46: metadata.ACLOpDescribe,     // ListPartitionReassignments
	49: metadata.ACLOpAlterConfigs, // AlterClientQuotas
	51: metadata.ACLOpAlter,        // AlterUserScramCredentials
	55: metadata.ACLOpDescribe,     // DescribeQuorum
	57: metadata.ACLOpAlter,        // UpdateFeatures
	60: metadata.ACLOpAlter,        // DescribeCluster: ALTER on the controller, unlike a broker's DESCRIBE
	64: metadata.ACLOpAlter,        // UnregisterBroker
	80: metadata.ACLOpAlter,        // AddRaftVoter
	81: metadata.ACLOpAlter,        // RemoveRaftVoter
}

// resourceChecked are the requests checked resource by resource
// (authorizeResources).
var resourceChecked = map[int16]bool{19: true, 20: true, 33: true, 37: true, 44: true}

// authorizeAdmin answers a request of a principal without CLUSTER_ACTION
// on the cluster. It returns the request to run (nil: answered by resp
// alone) and, when only some of its resources are allowed, merge, which
// adds the refused ones to the answer of the rest.
func (n *Node) authorizeAdmin(img *metadata.Image, principal, host string, req kmsg.Request) (run kmsg.Request, resp kmsg.Response, merge func(kmsg.Response)) {
	key := req.Key()
	if key == describeConfigsKey {
		return req, nil, nil // Config.DescribeConfigs checks DESCRIBE_CONFIGS per resource
	}
	if op, ok := clusterOps[key]; ok {
		if n.cfg.Authorizer.Authorize(img, principal, host, op, metadata.ACLResourceCluster, metadata.ClusterResourceName) {
			return req, nil, nil
		}
		return nil, errorResponse(req, kerr.ClusterAuthorizationFailed.Code), nil
	}
	if !resourceChecked[key] {
		resp = errorResponse(req, kerr.ClusterAuthorizationFailed.Code)
		setErrorMessage(resp, "this request is served to brokers and controllers only (CLUSTER_ACTION on the cluster)")
		return nil, resp, nil
	}
	allow := func(op metadata.ACLOperation, rt metadata.ACLResourceType, name string) bool {
		return n.cfg.Authorizer.Authorize(img, principal, host, op, rt, name)
	}
	return authorizeResources(img, req, allow)
}

// authorizeResources splits a per-resource request into what allow
// permits and the refusals, with ControllerApis' checks: CreateTopics
// CREATE on the cluster or the topic, DeleteTopics DELETE on the topic
// (DESCRIBE too when named by id, so an id does not reveal a name),
// CreatePartitions ALTER on the topic, AlterConfigs and
// IncrementalAlterConfigs ALTER_CONFIGS on the topic or, for a broker or
// logger, the cluster.
func authorizeResources(img *metadata.Image, req kmsg.Request, allow func(metadata.ACLOperation, metadata.ACLResourceType, string) bool) (kmsg.Request, kmsg.Response, func(kmsg.Response)) {
	topic := metadata.ACLResourceTopic
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		all := allow(metadata.ACLOpCreate, metadata.ACLResourceCluster, metadata.ClusterResourceName)
		var refused []kmsg.CreateTopicsResponseTopic
		r2 := *r
		r2.Topics = nil
		for _, t := range r.Topics {
			if all || allow(metadata.ACLOpCreate, topic, t.Topic) {
				r2.Topics = append(r2.Topics, t)
				continue
			}
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.NumPartitions, rt.ReplicationFactor = t.Topic, kerr.TopicAuthorizationFailed.Code, -1, -1
			refused = append(refused, rt)
		}
		return splitAnswer(req, &r2, len(r2.Topics), len(refused), func(resp kmsg.Response) {
			x := resp.(*kmsg.CreateTopicsResponse)
			x.Topics = append(x.Topics, refused...)
		})
	case *kmsg.DeleteTopicsRequest:
		var refused []kmsg.DeleteTopicsResponseTopic
		r2 := *r
		r2.TopicNames, r2.Topics = nil, nil
		for _, name := range r.TopicNames {
			if allow(metadata.ACLOpDelete, topic, name) {
				r2.TopicNames = append(r2.TopicNames, name)
				continue
			}
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = kmsg.StringPtr(name), kerr.TopicAuthorizationFailed.Code
			refused = append(refused, rt)
		}
		for _, t := range r.Topics {
			name, byID := "", t.Topic == nil
			if t.Topic != nil {
				name = *t.Topic
			} else if ti, ok := img.TopicByID(t.TopicID); ok {
				name = ti.Name
			}
			ok := name != "" || byID // an unknown id is the controller's to answer
			if name != "" {
				ok = allow(metadata.ACLOpDelete, topic, name) && (!byID || allow(metadata.ACLOpDescribe, topic, name))
			}
			if ok {
				r2.Topics = append(r2.Topics, t)
				continue
			}
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, kerr.TopicAuthorizationFailed.Code
			refused = append(refused, rt)
		}
		return splitAnswer(req, &r2, len(r2.TopicNames)+len(r2.Topics), len(refused), func(resp kmsg.Response) {
			x := resp.(*kmsg.DeleteTopicsResponse)
			x.Topics = append(x.Topics, refused...)
		})
	case *kmsg.CreatePartitionsRequest:
		var refused []kmsg.CreatePartitionsResponseTopic
		r2 := *r
		r2.Topics = nil
		for _, t := range r.Topics {
			if allow(metadata.ACLOpAlter, topic, t.Topic) {
				r2.Topics = append(r2.Topics, t)
				continue
			}
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
			refused = append(refused, rt)
		}
		return splitAnswer(req, &r2, len(r2.Topics), len(refused), func(resp kmsg.Response) {
			x := resp.(*kmsg.CreatePartitionsResponse)
			x.Topics = append(x.Topics, refused...)
		})
	case *kmsg.AlterConfigsRequest:
		var refused []kmsg.AlterConfigsResponseResource
		r2 := *r
		r2.Resources = nil
		for _, res := range r.Resources {
			if code := configCheck(res.ResourceType, res.ResourceName, allow); code == 0 {
				r2.Resources = append(r2.Resources, res)
			} else {
				o := kmsg.NewAlterConfigsResponseResource()
				o.ResourceType, o.ResourceName, o.ErrorCode = res.ResourceType, res.ResourceName, code
				refused = append(refused, o)
			}
		}
		return splitAnswer(req, &r2, len(r2.Resources), len(refused), func(resp kmsg.Response) {
			x := resp.(*kmsg.AlterConfigsResponse)
			x.Resources = append(x.Resources, refused...)
		})
	case *kmsg.IncrementalAlterConfigsRequest:
		var refused []kmsg.IncrementalAlterConfigsResponseResource
		r2 := *r
		r2.Resources = nil
		for _, res := range r.Resources {
			if code := configCheck(res.ResourceType, res.ResourceName, allow); code == 0 {
				r2.Resources = append(r2.Resources, res)
			} else {
				o := kmsg.NewIncrementalAlterConfigsResponseResource()
				o.ResourceType, o.ResourceName, o.ErrorCode = res.ResourceType, res.ResourceName, code
				refused = append(refused, o)
			}
		}
		return splitAnswer(req, &r2, len(r2.Resources), len(refused), func(resp kmsg.Response) {
			x := resp.(*kmsg.IncrementalAlterConfigsResponse)
			x.Resources = append(x.Resources, refused...)
		})
	}
	return nil, errorResponse(req, kerr.ClusterAuthorizationFailed.Code), nil
}

// splitAnswer finishes authorizeResources: everything allowed runs the
// request as it came, nothing allowed is answered with the refusals alone,
// and a mix runs the allowed part and merges.
func splitAnswer(orig, allowed kmsg.Request, nAllowed, nRefused int, merge func(kmsg.Response)) (kmsg.Request, kmsg.Response, func(kmsg.Response)) {
	switch {
	case nRefused == 0:
		return orig, nil, nil
	case nAllowed == 0:
		resp := orig.ResponseKind()
		resp.SetVersion(orig.GetVersion())
		merge(resp)
		return nil, resp, nil
	}
	return allowed, nil, merge
}

// configCheck is ControllerApis' check of one config resource: the code
// to refuse it with, 0 if allowed.
func configCheck(rt kmsg.ConfigResourceType, name string, allow func(metadata.ACLOperation, metadata.ACLResourceType, string) bool) int16 {
	switch rt {
	case kmsg.ConfigResourceTypeTopic:
		if !allow(metadata.ACLOpAlterConfigs, metadata.ACLResourceTopic, name) {
			return kerr.TopicAuthorizationFailed.Code
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		if !allow(metadata.ACLOpAlterConfigs, metadata.ACLResourceGroup, name) {
			return kerr.GroupAuthorizationFailed.Code
		}
	default: // BROKER, BROKER_LOGGER, CLIENT_METRICS: the cluster
		if !allow(metadata.ACLOpAlterConfigs, metadata.ACLResourceCluster, metadata.ClusterResourceName) {
			return kerr.ClusterAuthorizationFailed.Code
		}
	}
	return 0
}

// describeCluster is DescribeCluster on the controller listener, as
// Kafka's ControllerApis answer it (AuthHelper.computeDescribeClusterResponse
// with the CONTROLLER endpoint type): the voters' endpoints on this
// listener, and the Raft leader as the controller id. Any voter answers
// from its own Raft configuration; nothing is forwarded.
func (n *Node) describeCluster(req *kmsg.DescribeClusterRequest, principal, host string) *kmsg.DescribeClusterResponse {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.SetVersion(req.Version)
	resp.EndpointType, resp.ControllerID = 2, -1
	resp.ClusterAuthorizedOperations = math.MinInt32
	endpoint := req.EndpointType
	if req.Version == 0 {
		endpoint = 1 // v0 has no field: a broker's question
	}
	switch {
	case endpoint != 1 && endpoint != 2:
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		if req.Version == 0 {
			resp.ErrorCode = kerr.InvalidRequest.Code
		}
		resp.ErrorMessage = kmsg.StringPtr("Unsupported endpoint type " + strconv.Itoa(int(endpoint)))
		return resp
	case endpoint != 2:
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		if req.Version == 0 {
			resp.ErrorCode = kerr.InvalidRequest.Code
		}
		resp.ErrorMessage = kmsg.StringPtr("The request was sent to an endpoint of type CONTROLLER, but we wanted an endpoint of type BROKER")
		return resp
	}
	img, _ := n.pub.Current()
	resp.ClusterID = img.ClusterID()
	if req.IncludeClusterAuthorizedOperations {
		switch a := n.cfg.Authorizer; {
		case a == nil: // no authorizer: everything
			var set int32
			for _, op := range metadata.ACLOperationsOf(metadata.ACLResourceCluster) {
				set |= 1 << op
			}
			resp.ClusterAuthorizedOperations = set
		case a.Authorize(img, principal, host, metadata.ACLOpDescribe, metadata.ACLResourceCluster, metadata.ClusterResourceName):
			resp.ClusterAuthorizedOperations = a.AuthorizedOperations(img, principal, host, metadata.ACLResourceCluster, metadata.ClusterResourceName)
		default:
			resp.ClusterAuthorizedOperations = 0
		}
	}
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	leader := n.LeaderID()
	for _, s := range f.Configuration().Servers {
		if s.Suffrage != raft.Voter {
			continue // a broker-only node: no controller endpoint
		}
		id, err := strconv.ParseInt(string(s.ID), 10, 32)
		if err != nil {
			continue
		}
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID = int32(id)
		host, port := splitHostPort(string(s.Address))
		b.Host, b.Port = host, int32(port)
		resp.Brokers = append(resp.Brokers, b)
		if b.NodeID == leader {
			resp.ControllerID = leader
		}
	}
	slices.SortFunc(resp.Brokers, func(a, b kmsg.DescribeClusterResponseBroker) int { return int(a.NodeID) - int(b.NodeID) })
	return resp
}

// describeAcls is DescribeAcls on the controller listener, from this
// node's image, as the broker answers it.
func (n *Node) describeAcls(req *kmsg.DescribeACLsRequest) *kmsg.DescribeACLsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	resp.SetVersion(req.Version)
	f := metadata.ACLFilter{
		ResourceType: metadata.ACLResourceType(req.ResourceType), ResourceName: req.ResourceName,
		PatternType: metadata.ACLPatternType(req.ResourcePatternType), Principal: req.Principal, Host: req.Host,
		Operation: metadata.ACLOperation(req.Operation), Permission: metadata.ACLPermission(req.PermissionType),
	}
	switch {
	case n.cfg.Authorizer == nil:
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr("No Authorizer is configured.")
		return resp
	case f.Unknown():
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("The filter has an UNKNOWN element.")
		return resp
	}
	img, _ := n.pub.Current()
	for _, a := range img.ACLs(f) {
		k := len(resp.Resources)
		if k == 0 || resp.Resources[k-1].ResourceType != kmsg.ACLResourceType(a.ResourceType) || resp.Resources[k-1].ResourceName != a.ResourceName ||
			resp.Resources[k-1].ResourcePatternType != kmsg.ACLResourcePatternType(a.PatternType) {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName = kmsg.ACLResourceType(a.ResourceType), a.ResourceName
			r.ResourcePatternType = kmsg.ACLResourcePatternType(a.PatternType)
			resp.Resources = append(resp.Resources, r)
			k++
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host = a.Principal, a.Host
		e.Operation, e.PermissionType = kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
		resp.Resources[k-1].ACLs = append(resp.Resources[k-1].ACLs, e)
	}
	return resp
}
