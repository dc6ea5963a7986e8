package broker

import "github.com/raftka/raftka/broker/kafkacode"

// errorCode turns an error into the Kafka code for a response field; the
// mapping itself lives in broker/kafkacode, shared with broker/replica.
func errorCode(err error) int16 { return kafkacode.Of(err) }
