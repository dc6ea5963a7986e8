package broker

// Authorized-operations sets (KIP-430), which Metadata, DescribeCluster and
// DescribeGroups return when a client asks. raftka has no authorizer, so
// each set is every operation of its resource type.

// authorizedOpsUnset is Kafka's "not requested" value (Integer.MIN_VALUE).
const authorizedOpsUnset = -2147483648

// Kafka's AclOperation codes, as bits of an authorized-operations set.
const (
	opRead            = 3
	opWrite           = 4
	opCreate          = 5
	opDelete          = 6
	opAlter           = 7
	opDescribe        = 8
	opClusterAction   = 9
	opDescribeConfigs = 10
	opAlterConfigs    = 11
	opIdempotentWrite = 12
)

func opSet(ops ...int) int32 {
	var s int32
	for _, o := range ops {
		s |= 1 << o
	}
	return s
}

var (
	topicOps   = opSet(opRead, opWrite, opCreate, opDelete, opAlter, opDescribe, opDescribeConfigs, opAlterConfigs)
	clusterOps = opSet(opCreate, opAlter, opDescribe, opClusterAction, opDescribeConfigs, opAlterConfigs, opIdempotentWrite)
)

// groupOps is the authorized-operations set of a group (Kafka's READ,
// DESCRIBE, DELETE): everything, without an authorizer.
var groupOps = opSet(opRead, opDescribe, opDelete)
