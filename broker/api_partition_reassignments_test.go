package broker

import (
	"context"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// reassignCtrl is a controller client that answers only the reassignment
// APIs and UnregisterBroker, recording what the broker forwarded.
type reassignCtrl struct {
	ControllerAdmin            // nil: the other admin APIs are not called here
	mu              sync.Mutex // the handlers run on the server's goroutines
	err             error
	alters          []*kmsg.AlterPartitionAssignmentsRequest
	lists           []*kmsg.ListPartitionReassignmentsRequest
	unregs          []int32
}

func (f *reassignCtrl) AlterPartitionReassignments(_ context.Context, req *kmsg.AlterPartitionAssignmentsRequest) (*kmsg.AlterPartitionAssignmentsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.alters = append(f.alters, req)
	if f.err != nil {
		return nil, f.err
	}
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.UnknownTags.Set(1, []byte{9}) // the controller's index tag, to be dropped
	for _, t := range req.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (f *reassignCtrl) ListPartitionReassignments(_ context.Context, req *kmsg.ListPartitionReassignmentsRequest) (*kmsg.ListPartitionReassignmentsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists = append(f.lists, req)
	if f.err != nil {
		return nil, f.err
	}
	return req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse), nil
}

func (f *reassignCtrl) UnregisterBroker(_ context.Context, id int32) (*kmsg.UnregisterBrokerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unregs = append(f.unregs, id)
	if f.err != nil {
		return nil, f.err
	}
	resp := kmsg.NewPtrUnregisterBrokerResponse()
	if id != 1 {
		resp.ErrorCode = kerr.BrokerIDNotRegistered.Code
	}
	return resp, nil
}

func (f *reassignCtrl) setErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func reassignReq(v int16, allow bool) *kmsg.AlterPartitionAssignmentsRequest {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.Version, req.AllowReplicationFactorChange = v, allow
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = "t"
	for _, p := range []int32{0, 1} {
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = p, []int32{1, 2}
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func roundTrip(t *testing.T, addr string, req kmsg.Request) kmsg.Response {
	t.Helper()
	c := dialRaw(t, addr)
	c.send(req, 7)
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	c.readResponse(resp)
	return resp
}

func TestReassignmentForwarding(t *testing.T) {
	ctrl := &reassignCtrl{}
	_, addr := startServer(t, testTable(t), Options{Deps: Deps{Admin: ctrl}})

	// v0 had no way to forbid a replication factor change: forwarded as
	// allowed. v1 passes the flag on and gets it echoed.
	for _, tc := range []struct {
		v            int16
		allow, fwded bool
	}{{0, false, true}, {1, false, false}, {1, true, true}} {
		resp := roundTrip(t, addr, reassignReq(tc.v, tc.allow)).(*kmsg.AlterPartitionAssignmentsResponse)
		ctrl.mu.Lock()
		got := ctrl.alters[len(ctrl.alters)-1]
		ctrl.mu.Unlock()
		if got.AllowReplicationFactorChange != tc.fwded {
			t.Errorf("v%d allow=%v forwarded allow=%v", tc.v, tc.allow, got.AllowReplicationFactorChange)
		}
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 || resp.UnknownTags.Len() != 0 {
			t.Errorf("v%d answer %+v", tc.v, resp)
		}
		if tc.v >= 1 && resp.AllowReplicationFactorChange != tc.allow {
			t.Errorf("v%d echoed allow=%v", tc.v, resp.AllowReplicationFactorChange)
		}
	}

	// A null topic list stays null on the way to the controller.
	roundTrip(t, addr, kmsg.NewPtrListPartitionReassignmentsRequest())
	ctrl.mu.Lock()
	got := ctrl.lists[len(ctrl.lists)-1]
	ctrl.mu.Unlock()
	if got.Topics != nil {
		t.Errorf("null topics forwarded as %+v", got.Topics)
	}

	// An unreachable controller: every partition and the top level carry
	// the code.
	ctrl.setErr(kerr.NotController)
	resp := roundTrip(t, addr, reassignReq(1, true)).(*kmsg.AlterPartitionAssignmentsResponse)
	if resp.ErrorCode != kerr.NotController.Code || resp.Topics[0].Partitions[1].ErrorCode != kerr.NotController.Code {
		t.Errorf("failed forward answered %+v", resp)
	}
	lr := roundTrip(t, addr, kmsg.NewPtrListPartitionReassignmentsRequest()).(*kmsg.ListPartitionReassignmentsResponse)
	if lr.ErrorCode != kerr.NotController.Code {
		t.Errorf("failed list answered %v", kerr.ErrorForCode(lr.ErrorCode))
	}
	ctrl.setErr(context.DeadlineExceeded)
	ur := kmsg.NewPtrUnregisterBrokerRequest()
	ur.BrokerID = 1
	if r := roundTrip(t, addr, ur).(*kmsg.UnregisterBrokerResponse); r.ErrorCode != kerr.RequestTimedOut.Code {
		t.Errorf("timed-out unregister answered %v", kerr.ErrorForCode(r.ErrorCode))
	}
	ctrl.setErr(nil)
	ur.BrokerID = 5
	r := roundTrip(t, addr, ur).(*kmsg.UnregisterBrokerResponse)
	ctrl.mu.Lock()
	last := ctrl.unregs[len(ctrl.unregs)-1]
	ctrl.mu.Unlock()
	if r.ErrorCode != kerr.BrokerIDNotRegistered.Code || last != 5 {
		t.Errorf("unregister of 5 answered %v (forwarded %d)", kerr.ErrorForCode(r.ErrorCode), last)
	}
}

// Without a controller client at all (Deps.Admin nil, or one without the
// reassignment methods) the answer is NOT_CONTROLLER, never a panic.
func TestReassignmentWithoutController(t *testing.T) {
	_, addr := startServer(t, testTable(t), Options{})
	resp := roundTrip(t, addr, reassignReq(1, true)).(*kmsg.AlterPartitionAssignmentsResponse)
	if resp.ErrorCode != kerr.NotController.Code || resp.Topics[0].Partitions[0].ErrorCode != kerr.NotController.Code {
		t.Fatalf("answer %+v", resp)
	}
	if r := roundTrip(t, addr, kmsg.NewPtrUnregisterBrokerRequest()).(*kmsg.UnregisterBrokerResponse); r.ErrorCode != kerr.NotController.Code {
		t.Fatalf("unregister answered %v", kerr.ErrorForCode(r.ErrorCode))
	}
}
