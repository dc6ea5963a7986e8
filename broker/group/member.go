package group

import (
	"crypto/rand"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// randomMemberID is Kafka's member id: the client id (or a static member's
// instance id), a dash, and a random UUID.
func randomMemberID(prefix string) string {
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails on supported platforms
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", prefix, u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// ConsumerProtocolType is the protocol type of Kafka consumer groups, whose
// member metadata is the consumer protocol's Subscription.
const ConsumerProtocolType = "consumer"

// SubscribedTopics decodes the consumer protocol Subscription of each
// member and returns the union of their topics. ok is false when any
// metadata does not decode: then the caller must assume every topic is
// subscribed, as Kafka does (OffsetDelete answers GROUP_SUBSCRIBED_TO_TOPIC).
func SubscribedTopics(metadatas [][]byte) (topics map[string]bool, ok bool) {
	topics = make(map[string]bool)
	for _, md := range metadatas {
		var s kmsg.ConsumerMemberMetadata
		if err := s.ReadFrom(md); err != nil {
			return nil, false
		}
		for _, t := range s.Topics {
			topics[t] = true
		}
	}
	return topics, true
}
