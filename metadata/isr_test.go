package metadata

import (
	"errors"
	"slices"
	"testing"
)

func TestValidateAlterPartition(t *testing.T) {
	img, _ := mustApply(t, threeBrokers(t),
		&RegisterBroker{BrokerID: 4, BrokerEpoch: 13, Fenced: true},
		&RegisterBroker{BrokerID: 5, BrokerEpoch: 14},
		&UnfenceBroker{BrokerID: 5, BrokerEpoch: 14},
		&BrokerShutdown{BrokerID: 5, BrokerEpoch: 14, InControlledShutdown: true},
		&CreateTopic{Name: "t", ID: idA, Partitions: []PartitionRegistration{
			{Partition: 0, Replicas: []int32{1, 2, 3, 4, 5}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 3, PartitionEpoch: 7},
		}},
	)
	base := AlterPartitionRequest{BrokerID: 1, BrokerEpoch: 10, TopicID: idA, Partition: 0, LeaderEpoch: 3, PartitionEpoch: 7, NewISR: []int32{1, 2, 3}}
	with := func(f func(*AlterPartitionRequest)) AlterPartitionRequest {
		r := base
		r.NewISR = slices.Clone(base.NewISR)
		f(&r)
		return r
	}
	cases := []struct {
		name string
		req  AlterPartitionRequest
		want error
	}{
		{"expand ok", base, nil},
		{"no broker epoch in old versions", with(func(r *AlterPartitionRequest) { r.BrokerEpoch = -1 }), nil},
		{"shrink ok", with(func(r *AlterPartitionRequest) { r.NewISR = []int32{1} }), nil},
		{"KIP-903 epochs match", with(func(r *AlterPartitionRequest) { r.NewISRBrokerEpochs = []int64{10, 11, 12} }), nil},
		{"KIP-903 unknown epoch", with(func(r *AlterPartitionRequest) { r.NewISRBrokerEpochs = []int64{10, -1, 12} }), nil},
		{"stale sender epoch", with(func(r *AlterPartitionRequest) { r.BrokerEpoch = 9 }), ErrStaleBrokerEpoch},
		{"unregistered sender", with(func(r *AlterPartitionRequest) { r.BrokerID = 9 }), ErrStaleBrokerEpoch},
		{"unknown topic", with(func(r *AlterPartitionRequest) { r.TopicID = idB }), ErrUnknownTopic},
		{"unknown partition", with(func(r *AlterPartitionRequest) { r.Partition = 1 }), ErrUnknownPartition},
		{"old leader epoch", with(func(r *AlterPartitionRequest) { r.LeaderEpoch = 2 }), ErrFencedLeaderEpoch},
		{"future leader epoch", with(func(r *AlterPartitionRequest) { r.LeaderEpoch = 4 }), ErrFencedLeaderEpoch},
		{"not the leader", with(func(r *AlterPartitionRequest) { r.BrokerID, r.BrokerEpoch = 2, 11 }), ErrNotLeader},
		{"stale partition epoch", with(func(r *AlterPartitionRequest) { r.PartitionEpoch = 6 }), ErrInvalidUpdateVersion},
		{"empty ISR", with(func(r *AlterPartitionRequest) { r.NewISR = nil }), ErrInvalidRequest},
		{"ISR without leader", with(func(r *AlterPartitionRequest) { r.NewISR = []int32{2, 3} }), ErrInvalidRequest},
		{"ISR duplicate", with(func(r *AlterPartitionRequest) { r.NewISR = []int32{1, 2, 2} }), ErrInvalidRequest},
		{"ISR member not a replica", with(func(r *AlterPartitionRequest) { r.NewISR = []int32{1, 9} }), ErrInvalidRequest},
		{"epochs length mismatch", with(func(r *AlterPartitionRequest) { r.NewISRBrokerEpochs = []int64{10} }), ErrInvalidRequest},
		{"fenced member", with(func(r *AlterPartitionRequest) { r.NewISR = []int32{1, 4} }), ErrIneligibleReplica},
		{"shutting-down member", with(func(r *AlterPartitionRequest) { r.NewISR = []int32{1, 5} }), ErrIneligibleReplica},
		{"KIP-903 stale member epoch", with(func(r *AlterPartitionRequest) { r.NewISRBrokerEpochs = []int64{10, 11, 2} }), ErrIneligibleReplica},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec, err := img.ValidateAlterPartition(c.req)
			if c.want != nil {
				if !errors.Is(err, c.want) || rec != nil {
					t.Fatalf("got %+v, %v; want %v", rec, err, c.want)
				}
				return
			}
			if err != nil || rec == nil {
				t.Fatalf("got %+v, %v", rec, err)
			}
			next, _ := mustApply(t, img, rec)
			p, _ := next.Partition(idA, 0)
			if !slices.Equal(p.ISR, c.req.NewISR) || p.Leader != 1 || p.LeaderEpoch != 3 || p.PartitionEpoch != 8 {
				t.Fatalf("after apply: %+v", p)
			}
			// The same request again is fenced by the partition epoch.
			if _, err := next.ValidateAlterPartition(c.req); !errors.Is(err, ErrInvalidUpdateVersion) {
				t.Fatalf("replayed request: %v", err)
			}
		})
	}
	// An ISR equal to the current one needs no record.
	rec, err := img.ValidateAlterPartition(with(func(r *AlterPartitionRequest) { r.NewISR = []int32{1, 2} }))
	if rec != nil || err != nil {
		t.Fatalf("no-op: %+v %v", rec, err)
	}
}
