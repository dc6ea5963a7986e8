package coordslot

import (
	"context"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Images is the metadata view Locate reads; both coordinators'
// MetadataSource satisfy it.
type Images interface {
	Current() (*metadata.Image, uint64)
}

// Locate returns the broker that leads key's slot of topic, for
// FindCoordinator. Kafka creates a coordinator topic on its first use, so
// when the topic does not exist yet Locate calls create and reads the image
// again. COORDINATOR_NOT_AVAILABLE means the slot has no leader yet (or
// cannot have one: too few brokers); an error of create is returned as it
// is, since each coordinator already turns its failures into what the
// client should hear.
func Locate(ctx context.Context, md Images, topic, key string, create func(context.Context) error) (int32, error) {
	img, _ := md.Current()
	p, ok := Place(img, topic, key)
	if !ok {
		if err := create(ctx); err != nil {
			return -1, err
		}
		img, _ = md.Current()
		if p, ok = Place(img, topic, key); !ok {
			return -1, kerr.CoordinatorNotAvailable
		}
	}
	if p.Leader < 0 {
		return -1, kerr.CoordinatorNotAvailable
	}
	return p.Leader, nil
}
