package broker

// metadataTopic is KRaft's name for the metadata log (raftfsm.MetadataTopic
// in DescribeQuorum's answers); no client may create or configure a topic
// of that name.
const metadataTopic = "__cluster_metadata"
