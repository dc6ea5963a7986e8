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
func TestAdvertisedVersionsAreKafka41(t *testing.T) {
	k41 := kversion.V4_1_0()
	for _, k := range defaultAPIs.apiKeys() {
		name := kmsg.NameForKey(k.ApiKey)
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
