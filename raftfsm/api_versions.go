package raftfsm

import (
	"slices"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions on the controller listener. Kafka's controllers answer it,
// before a SASL login too, so that tools started with
// --bootstrap-controller (and any Kafka client) can begin: the answer
// lists what this listener serves, nothing else. Those are the requests
// decideFor maps (a test keeps the two lists the same), from version 0 to
// the highest kmsg decodes, which is what parseRequest accepts, and
// ApiVersions itself at Kafka 4.1's versions.

// maxAPIVersionsVersion is Kafka 4.1's highest ApiVersions version.
const maxAPIVersionsVersion = 4

// controllerAPIKeys are the requests serveConn answers with decideFor.
var controllerAPIKeys = []int16{
	8,  // OffsetCommit (group offsets, and DeleteOffsets through it)
	14, // SyncGroup (group generations)
	19, // CreateTopics
	20, // DeleteTopics
	29, // DescribeAcls
	30, // CreateAcls
	31, // DeleteAcls
	33, // AlterConfigs
	37, // CreatePartitions
	42, // DeleteGroups
	43, // ElectLeaders
	44, // IncrementalAlterConfigs
	45, // AlterPartitionReassignments
	46, // ListPartitionReassignments
	49, // AlterClientQuotas
	51, // AlterUserScramCredentials
	55, // DescribeQuorum
	56, // AlterPartition
	57, // UpdateFeatures
	58, // Envelope
	60, // DescribeCluster
	62, // BrokerRegistration
	63, // BrokerHeartbeat
	64, // UnregisterBroker
	67, // AllocateProducerIds
	80, // AddRaftVoter
	81, // RemoveRaftVoter
	82, // UpdateRaftVoter
}

// describeConfigsKey is DescribeConfigs, served only with
// Config.DescribeConfigs.
const describeConfigsKey = 32

// ControllerAPIVersions is the controller listener's ApiVersions list,
// ascending by key, of a node without Config.DescribeConfigs.
func ControllerAPIVersions() []kmsg.ApiVersionsResponseApiKey {
	return ControllerAPIVersionsWith(false)
}

// ControllerAPIVersionsWith is ControllerAPIVersions of a node that
// serves DescribeConfigs (Config.DescribeConfigs set) or not.
func ControllerAPIVersionsWith(describeConfigs bool) []kmsg.ApiVersionsResponseApiKey {
	keys := append(slices.Clone(controllerAPIKeys), 18)
	if describeConfigs {
		keys = append(keys, describeConfigsKey)
	}
	slices.Sort(keys)
	out := make([]kmsg.ApiVersionsResponseApiKey, 0, len(keys))
	for _, k := range keys {
		ak := kmsg.NewApiVersionsResponseApiKey()
		ak.ApiKey, ak.MinVersion = k, 0
		if k == 18 {
			ak.MaxVersion = maxAPIVersionsVersion
		} else {
			ak.MaxVersion = kmsg.RequestForKey(k).MaxVersion()
		}
		out = append(out, ak)
	}
	return out
}

// APIVersionsResponse answers an ApiVersions request of version on the
// controller listener. A version it does not serve gets Kafka's answer:
// UNSUPPORTED_VERSION in a v0 response that lists ApiVersions' own
// versions, so the client retries with one of them.
func APIVersionsResponse(version int16) *kmsg.ApiVersionsResponse {
	return APIVersionsResponseWith(version, false)
}

// APIVersionsResponseWith is APIVersionsResponse of a node that serves
// DescribeConfigs or not (ControllerAPIVersionsWith).
func APIVersionsResponseWith(version int16, describeConfigs bool) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	if version < 0 || version > maxAPIVersionsVersion {
		resp.SetVersion(0)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		ak := kmsg.NewApiVersionsResponseApiKey()
		ak.ApiKey, ak.MaxVersion = 18, maxAPIVersionsVersion
		resp.ApiKeys = append(resp.ApiKeys, ak)
		return resp
	}
	resp.SetVersion(version)
	resp.ApiKeys = ControllerAPIVersionsWith(describeConfigs)
	return resp
}

// apiVersionsResponse is APIVersionsResponse with, from v3, the features
// (KIP-584) as Kafka's controllers list them, so kafka-features.sh
// describe --bootstrap-controller works: what this binary supports, and
// the levels finalized in this node's image at its Raft index.
func (n *Node) apiVersionsResponse(version int16) *kmsg.ApiVersionsResponse {
	resp := APIVersionsResponseWith(version, n.cfg.DescribeConfigs != nil)
	if resp.ErrorCode != 0 || version < 3 {
		return resp
	}
	names := make([]string, 0, len(metadata.SupportedFeatures))
	for name := range metadata.SupportedFeatures {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		r := metadata.SupportedFeatures[name]
		if r.Max == 0 {
			continue // as Kafka's supported features leave such features out
		}
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = name, r.Min, r.Max
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	}
	img, index := n.pub.Current()
	resp.FinalizedFeaturesEpoch = int64(index)
	levels := img.Features()
	names = names[:0]
	for name, level := range levels {
		if level > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = name, levels[name], levels[name]
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	}
	return resp
}
