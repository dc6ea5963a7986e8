package invariants

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// ID identifies one produced record: the producer, the partition it was sent
// to and its sequence number in that producer's stream to that partition
// (0, 1, 2, ...). Every value written by a Producer starts with its ID, so
// a value is unique in a run and says where and in which order it belongs.
type ID struct {
	Producer  string
	Partition int32
	Seq       int64
}

func (id ID) String() string { return fmt.Sprintf("%s/%d/%d", id.Producer, id.Partition, id.Seq) }

// errNoID is returned for values this package did not write.
var errNoID = errors.New("invariants: value carries no record id")

// EncodeValue renders id as "producer/partition/seq;" padded with '.' up to
// size bytes (a value is never shorter than its id). The producer name must
// not contain '/' or ';'.
func EncodeValue(id ID, size int) []byte {
	v := fmt.Appendf(nil, "%s/%d/%d;", id.Producer, id.Partition, id.Seq)
	for len(v) < size {
		v = append(v, '.')
	}
	return v
}

// ParseValue reads the id EncodeValue wrote at the front of v.
func ParseValue(v []byte) (ID, error) {
	head, _, ok := bytes.Cut(v, []byte{';'})
	if !ok {
		return ID{}, errNoID
	}
	parts := bytes.Split(head, []byte{'/'})
	if len(parts) != 3 || len(parts[0]) == 0 {
		return ID{}, errNoID
	}
	p, err := strconv.ParseInt(string(parts[1]), 10, 32)
	if err != nil || p < 0 {
		return ID{}, errNoID
	}
	s, err := strconv.ParseInt(string(parts[2]), 10, 64)
	if err != nil || s < 0 {
		return ID{}, errNoID
	}
	return ID{Producer: string(parts[0]), Partition: int32(p), Seq: s}, nil
}
