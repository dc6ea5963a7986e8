package coordslot

import (
	"context"
	"errors"
	"testing"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

type images struct{ img *metadata.Image }

func (m *images) Current() (*metadata.Image, uint64) { return m.img, 1 }

func TestLocate(t *testing.T) {
	slots := slotsImage(t)
	empty := metadata.NewImage()
	errCreate := errors.New("create failed")
	cases := []struct {
		name    string
		before  *metadata.Image
		after   *metadata.Image // the image once create returns; nil: create fails
		key     string
		leader  int32
		err     error
		creates int
	}{
		{"led slot", slots, nil, "c", 1, nil, 0},
		{"other leader", slots, nil, "b", 2, nil, 0},
		{"offline slot", slots, nil, "a", -1, kerr.CoordinatorNotAvailable, 0},
		{"created on first use", empty, slots, "c", 1, nil, 1},
		{"created, slot offline", empty, slots, "a", -1, kerr.CoordinatorNotAvailable, 1},
		{"create fails", empty, nil, "c", -1, errCreate, 1},
		{"created but not yet visible", empty, empty, "c", -1, kerr.CoordinatorNotAvailable, 1},
	}
	for _, c := range cases {
		md := &images{img: c.before}
		creates := 0
		create := func(context.Context) error {
			creates++
			if c.after == nil {
				return errCreate
			}
			md.img = c.after
			return nil
		}
		leader, err := Locate(context.Background(), md, topic, c.key, create)
		if leader != c.leader || !errors.Is(err, c.err) || creates != c.creates {
			t.Errorf("%s: Locate = %d, %v with %d creates; want %d, %v with %d", c.name, leader, err, creates, c.leader, c.err, c.creates)
		}
	}
}
