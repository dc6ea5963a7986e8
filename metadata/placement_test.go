package metadata

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

func brokers(ids ...int32) []BrokerRegistration {
	out := make([]BrokerRegistration, len(ids))
	for i, id := range ids {
		out[i] = BrokerRegistration{ID: id, Epoch: 1}
	}
	return out
}

func TestPlaceReplicasRoundRobin(t *testing.T) {
	cases := []struct {
		name string
		bs   []BrokerRegistration
		p    Placement
		want [][]int32
	}{
		{"rf1 start0", brokers(0, 1, 2), Placement{Partitions: 4, ReplicationFactor: 1},
			[][]int32{{0}, {1}, {2}, {0}}},
		// Followers sit right after the leader; after n partitions the shift
		// grows by one so follower sets differ.
		{"rf2 shift grows", brokers(0, 1, 2), Placement{Partitions: 6, ReplicationFactor: 2},
			[][]int32{{0, 1}, {1, 2}, {2, 0}, {0, 2}, {1, 0}, {2, 1}}},
		{"rf3 start1 shift1", brokers(10, 20, 30, 40), Placement{Partitions: 4, ReplicationFactor: 3, StartIndex: 1, Shift: 1},
			[][]int32{{20, 40, 10}, {30, 10, 20}, {40, 20, 30}, {10, 30, 40}}},
		{"continues from first partition", brokers(0, 1, 2), Placement{FirstPartition: 3, Partitions: 2, ReplicationFactor: 2},
			[][]int32{{0, 2}, {1, 0}}},
		{"negative start and shift wrap", brokers(0, 1, 2), Placement{Partitions: 1, ReplicationFactor: 2, StartIndex: -1, Shift: -1},
			[][]int32{{2, 0}}},
		{"unsorted input, fenced and shutting down skipped",
			[]BrokerRegistration{{ID: 3}, {ID: 1}, {ID: 2, Fenced: true}, {ID: 0, InControlledShutdown: true}},
			Placement{Partitions: 2, ReplicationFactor: 2}, [][]int32{{1, 3}, {3, 1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := PlaceReplicas(c.bs, c.p)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, c.want, slices.Equal) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestPlaceReplicasErrors(t *testing.T) {
	cases := []struct {
		bs   []BrokerRegistration
		p    Placement
		want error
	}{
		{brokers(1, 2), Placement{Partitions: 1, ReplicationFactor: 3}, ErrInvalidReplicationFactor},
		{[]BrokerRegistration{{ID: 1}, {ID: 2, Fenced: true}}, Placement{Partitions: 1, ReplicationFactor: 2}, ErrInvalidReplicationFactor},
		{nil, Placement{Partitions: 1, ReplicationFactor: 1}, ErrInvalidReplicationFactor},
		{brokers(1), Placement{Partitions: 1, ReplicationFactor: 0}, ErrInvalidReplicationFactor},
		{brokers(1), Placement{Partitions: 0, ReplicationFactor: 1}, ErrInvalidPartitions},
		{brokers(1), Placement{FirstPartition: -1, Partitions: 1, ReplicationFactor: 1}, ErrInvalidPartitions},
	}
	for i, c := range cases {
		if _, err := PlaceReplicas(c.bs, c.p); !errors.Is(err, c.want) {
			t.Errorf("case %d: %v, want %v", i, err, c.want)
		}
	}
}

// Properties every placement holds: the right size, distinct brokers, only
// usable brokers, leaders balanced within one, and with racks every
// partition spans min(RF, racks) racks.
func TestPlaceReplicasBalanceAndRacks(t *testing.T) {
	for n := 1; n <= 7; n++ {
		for rf := 1; rf <= n; rf++ {
			for _, nRacks := range []int{0, 2, 3} {
				bs := make([]BrokerRegistration, n)
				rackOf := map[int32]string{}
				for i := range bs {
					bs[i] = BrokerRegistration{ID: int32(100 + i)}
					if nRacks > 0 {
						bs[i].Rack = fmt.Sprintf("r%d", i%nRacks)
					}
					rackOf[bs[i].ID] = bs[i].Rack
				}
				parts := int32(3 * n)
				got, err := PlaceReplicas(bs, Placement{Partitions: parts, ReplicationFactor: int16(rf), StartIndex: n / 2, Shift: 1})
				if err != nil {
					t.Fatal(err)
				}
				leaders := map[int32]int{}
				replicasPer := map[int32]int{}
				for p, reps := range got {
					if len(reps) != rf {
						t.Fatalf("n=%d rf=%d: partition %d has %v", n, rf, p, reps)
					}
					racks := map[string]bool{}
					for i, r := range reps {
						if slices.Contains(reps[:i], r) || rackOf[r] == "" && nRacks > 0 {
							t.Fatalf("n=%d rf=%d: bad replicas %v", n, rf, reps)
						}
						racks[rackOf[r]] = true
						replicasPer[r]++
					}
					leaders[reps[0]]++
					if nRacks > 0 && len(racks) != min(rf, min(nRacks, n)) {
						t.Fatalf("n=%d rf=%d racks=%d: partition %d %v spans %d racks", n, rf, nRacks, p, reps, len(racks))
					}
				}
				for _, b := range bs {
					if leaders[b.ID] != 3 {
						t.Fatalf("n=%d rf=%d racks=%d: broker %d leads %d of %d partitions: %v", n, rf, nRacks, b.ID, leaders[b.ID], parts, got)
					}
					if nRacks == 0 && replicasPer[b.ID] != 3*rf {
						t.Fatalf("n=%d rf=%d: broker %d holds %d replicas, want %d", n, rf, b.ID, replicasPer[b.ID], 3*rf)
					}
				}
			}
		}
	}
}

func TestPlaceReplicasRackInterleaving(t *testing.T) {
	// Racks a: 1,2  b: 3,4  c: 5 -> interleaved 1(a) 3(b) 5(c) 2(a) 4(b).
	bs := []BrokerRegistration{{ID: 1, Rack: "a"}, {ID: 2, Rack: "a"}, {ID: 3, Rack: "b"}, {ID: 4, Rack: "b"}, {ID: 5, Rack: "c"}}
	got, err := PlaceReplicas(bs, Placement{Partitions: 5, ReplicationFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	leaders := []int32{}
	for _, r := range got {
		leaders = append(leaders, r[0])
	}
	if !slices.Equal(leaders, []int32{1, 3, 5, 2, 4}) {
		t.Fatalf("leaders %v (placement %v)", leaders, got)
	}
	// A broker without a rack counts as a rack of its own.
	mixed := []BrokerRegistration{{ID: 1, Rack: "a"}, {ID: 2, Rack: "a"}, {ID: 3}}
	got, err = PlaceReplicas(mixed, Placement{Partitions: 3, ReplicationFactor: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, reps := range got {
		if !slices.Contains(reps, 3) {
			t.Fatalf("partition %v does not span both racks", reps)
		}
	}
}

func TestValidateReplicaAssignment(t *testing.T) {
	bs := []BrokerRegistration{{ID: 1}, {ID: 2}, {ID: 3, Fenced: true}, {ID: 4, InControlledShutdown: true}}
	cases := []struct {
		name   string
		a      [][]int32
		wantRF int
		want   error
	}{
		{"ok", [][]int32{{1, 2}, {2, 1}}, 0, nil},
		{"ok with one unusable", [][]int32{{1, 3}}, 2, nil},
		{"empty", nil, 0, ErrInvalidPartitions},
		{"empty replicas", [][]int32{{}}, 0, ErrInvalidReplicaAssignment},
		{"duplicate", [][]int32{{1, 1}}, 0, ErrInvalidReplicaAssignment},
		{"unknown broker", [][]int32{{1, 9}}, 0, ErrInvalidReplicaAssignment},
		{"inconsistent rf", [][]int32{{1, 2}, {1}}, 0, ErrInvalidReplicaAssignment},
		{"rf differs from existing", [][]int32{{1}}, 2, ErrInvalidReplicaAssignment},
		{"all unusable", [][]int32{{3, 4}}, 0, ErrInvalidReplicaAssignment},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateReplicaAssignment(c.a, bs, c.wantRF)
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
}

func TestNewPartitions(t *testing.T) {
	usable := func(id int32) bool { return id != 2 }
	got := NewPartitions(3, [][]int32{{2, 1, 3}, {2}}, usable)
	want := []PartitionRegistration{
		{Partition: 3, Replicas: []int32{2, 1, 3}, ISR: []int32{1, 3}, Leader: 1},
		{Partition: 4, Replicas: []int32{2}, ISR: []int32{2}, Leader: NoLeader},
	}
	if !slices.EqualFunc(got, want, PartitionRegistration.Equal) {
		t.Fatalf("got %+v", got)
	}
	// They apply as a new topic.
	img, d := NewImage().Apply([]Record{&CreateTopic{Name: "t", ID: idA, Partitions: NewPartitions(0, [][]int32{{1, 2}}, usable)}})
	if len(d.Skipped) != 0 || img.NumTopics() != 1 {
		t.Fatalf("skipped %+v", d.Skipped)
	}
}
