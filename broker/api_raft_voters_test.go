package broker

import (
	"context"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// voterAdmin is a Deps.Admin that forwards voter changes (RaftVoterChanger);
// the embedded ControllerAdmin is nil, so any other call would panic.
type voterAdmin struct {
	ControllerAdmin
	err      error
	code     int16
	seen     []kmsg.Request
	deadline time.Duration // the forwarded call's, from when it started
}

func (v *voterAdmin) answer(ctx context.Context, req kmsg.Request, code *int16, tags *kmsg.Tags) error {
	v.seen = append(v.seen, req)
	if d, ok := ctx.Deadline(); ok {
		v.deadline = time.Until(d)
	}
	*code = v.code
	tagged(tags)
	return v.err
}

func (v *voterAdmin) AddRaftVoter(ctx context.Context, req *kmsg.AddRaftVoterRequest) (*kmsg.AddRaftVoterResponse, error) {
	c := *req
	resp := c.ResponseKind().(*kmsg.AddRaftVoterResponse)
	if err := v.answer(ctx, &c, &resp.ErrorCode, &resp.UnknownTags); err != nil {
		return nil, err
	}
	return resp, nil
}

func (v *voterAdmin) RemoveRaftVoter(ctx context.Context, req *kmsg.RemoveRaftVoterRequest) (*kmsg.RemoveRaftVoterResponse, error) {
	c := *req
	resp := c.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
	if err := v.answer(ctx, &c, &resp.ErrorCode, &resp.UnknownTags); err != nil {
		return nil, err
	}
	return resp, nil
}

// TestRaftVoterForwarding: both voter changes need ALTER on the cluster
// and a Deps.Admin that forwards them, and answer the controller's code
// (or the failed call's) without the controller's tags. AddRaftVoter is
// forwarded without the client's tags, waiting for the commit at v0, and
// bounded by its TimeoutMs; RemoveRaftVoter by the default bound.
func TestRaftVoterForwarding(t *testing.T) {
	notReached := "no controller reachable from this broker"
	cases := []struct {
		name       string
		authorizer bool // the StandardAuthorizer with no ACLs: everything denied
		admin      func() ControllerAdmin
		code       int16
		msg        string // "<nil>" for none
		forwarded  bool
	}{
		{"denied", true, func() ControllerAdmin { return &voterAdmin{} }, kerr.ClusterAuthorizationFailed.Code, "<nil>", false},
		{"no admin", false, func() ControllerAdmin { return nil }, adminUnreachable.Code, notReached, false},
		{"admin without voter changes", false, func() ControllerAdmin { return struct{ ControllerAdmin }{} }, adminUnreachable.Code, notReached, false},
		{"controller answers", false, func() ControllerAdmin { return &voterAdmin{code: kerr.DuplicateVoter.Code} }, kerr.DuplicateVoter.Code, "<nil>", true},
		{"call fails", false, func() ControllerAdmin { return &voterAdmin{err: kerr.RequestTimedOut} }, kerr.RequestTimedOut.Code, kerr.RequestTimedOut.Error(), true},
	}
	for _, c := range cases {
		for _, key := range []int16{80, 81} {
			admin := c.admin()
			opts := Options{Logger: testLogger(t), NodeID: 1, Deps: Deps{Metadata: staticMetadata{img: metadata.NewImage(), index: 1}, Admin: admin}}
			if c.authorizer {
				opts.Authorizer = &metadata.Authorizer{}
			}
			s, err := newServer(opts, defaultAPIs)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			var code int16
			var msg *string
			if key == 80 {
				req := kmsg.NewPtrAddRaftVoterRequest()
				req.VoterID, req.TimeoutMillis = 4, 5000
				tagged(&req.UnknownTags)
				resp := call[*kmsg.AddRaftVoterResponse](t, s, req)
				code, msg = resp.ErrorCode, resp.ErrorMessage
				if resp.UnknownTags.Len() != 0 {
					t.Errorf("%s AddRaftVoter: tags %v left on the answer", c.name, resp.UnknownTags)
				}
			} else {
				req := kmsg.NewPtrRemoveRaftVoterRequest()
				req.VoterID = 4
				resp := call[*kmsg.RemoveRaftVoterResponse](t, s, req)
				code, msg = resp.ErrorCode, resp.ErrorMessage
				if resp.UnknownTags.Len() != 0 {
					t.Errorf("%s RemoveRaftVoter: tags %v left on the answer", c.name, resp.UnknownTags)
				}
			}
			name := c.name + " " + kmsg.NameForKey(key)
			if code != c.code || deref(msg) != c.msg {
				t.Errorf("%s: code %d (%s), want %d (%s)", name, code, deref(msg), c.code, c.msg)
			}
			va, _ := admin.(*voterAdmin)
			if forwarded := va != nil && len(va.seen) == 1; forwarded != c.forwarded {
				t.Fatalf("%s: forwarded %v, want %v", name, forwarded, c.forwarded)
			}
			if !c.forwarded {
				continue
			}
			bound := defaultForwardTimeout
			if key == 80 {
				bound = 5 * time.Second
				fwd := va.seen[0].(*kmsg.AddRaftVoterRequest)
				if fwd.UnknownTags.Len() != 0 || !fwd.AckWhenCommitted || fwd.VoterID != 4 {
					t.Errorf("%s: forwarded %+v", name, fwd)
				}
			}
			if va.deadline > bound || va.deadline < bound-time.Second {
				t.Errorf("%s: forwarded with %v left, want about %v", name, va.deadline, bound)
			}
		}
	}
}
