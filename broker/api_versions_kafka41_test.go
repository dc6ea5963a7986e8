package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// raftka answers as Kafka 4.1: nothing is advertised above the version
// Kafka 4.1.0's message JSON defines (clients/src/main/resources/common/
// message/*Request.json at the 4.1.0 tag). franz-go's kversion.V4_1_0
// is that table as franz-go records it; the pins below repeat the three
// versions that once went past it, checked against the JSON files.
//
// Share groups (KIP-932) are the one exception the issues make: they are
// served as Kafka 4.2 serves them, so their keys are checked against
// kversion.V4_2_0 instead, minimum and maximum, and every other key stays
// held to 4.1.
func TestAdvertisedVersionsAreKafka41(t *testing.T) {
	k41 := kversion.V4_1_0()
	k42 := kversion.V4_2_0()
	for _, k := range defaultAPIs.apiKeys() {
		name := kmsg.NameForKey(k.ApiKey)
		if shareGroupKeys[k.ApiKey] {
			max, ok := k42.LookupMaxKeyVersion(k.ApiKey)
			if !ok {
				t.Errorf("%s (key %d) is advertised but Kafka 4.2 has no such API", name, k.ApiKey)
				continue
			}
			if k.MaxVersion != max {
				t.Errorf("%s advertises up to v%d; Kafka 4.2 serves up to v%d", name, k.MaxVersion, max)
			}
			if want := shareGroupMin[k.ApiKey]; k.MinVersion != want {
				t.Errorf("%s advertises from v%d; Kafka 4.2 serves from v%d", name, k.MinVersion, want)
			}
			continue
		}
		max, ok := k41.LookupMaxKeyVersion(k.ApiKey)
		if !ok {
			t.Errorf("%s (key %d) is advertised but Kafka 4.1 has no such API", name, k.ApiKey)
			continue
		}
		if k.MaxVersion > max {
			t.Errorf("%s advertises v%d, above Kafka 4.1's v%d", name, k.MaxVersion, max)
		}
	}
	for key, want := range map[int16]int16{2: 10, 8: 9, 9: 9} { // ListOffsets, OffsetCommit, OffsetFetch
		if e := defaultAPIs.lookup(key); e == nil || e.max != want {
			t.Errorf("%s: max %v, want Kafka 4.1's v%d", kmsg.NameForKey(key), e, want)
		}
	}
}

// shareGroupKeys are the KIP-932 keys: ShareGroupHeartbeat, ShareGroupDescribe,
// ShareFetch, ShareAcknowledge, the share-state RPCs and the share-group
// offset admin calls.
var shareGroupKeys = map[int16]bool{76: true, 77: true, 78: true, 79: true, 83: true, 84: true, 85: true, 86: true, 87: true, 90: true, 91: true, 92: true}

// shareGroupMin is Kafka 4.2's minimum for each: v0 of keys 76-79 was the
// early-access protocol a 4.2 broker no longer serves.
var shareGroupMin = map[int16]int16{76: 1, 77: 1, 78: 1, 79: 1}
