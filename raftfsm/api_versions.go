package raftfsm

import (
	"slices"

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
	62, // BrokerRegistration
	63, // BrokerHeartbeat
	64, // UnregisterBroker
	67, // AllocateProducerIds
	80, // AddRaftVoter
	81, // RemoveRaftVoter
	82, // UpdateRaftVoter
}

// ControllerAPIVersions is the controller listener's ApiVersions list,
// ascending by key.
func ControllerAPIVersions() []kmsg.ApiVersionsResponseApiKey {
	keys := append(slices.Clone(controllerAPIKeys), 18)
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
	resp.ApiKeys = ControllerAPIVersions()
	return resp
}
