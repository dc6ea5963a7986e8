package raftfsm

import (
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func upsertion(name string, m int8, iters int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations = name, m, iters
	u.Salt = []byte("salt-" + name)
	salted, _ := metadata.SaltPassword(metadata.ScramMechanism(max(m, 1)), "pw-"+name, u.Salt, max(iters, 1))
	u.SaltedPassword = salted
	return u
}

func deletion(name string, m int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = name, m
	return d
}

// Kafka's ScramControlManager rules, user by user.
func TestDecideAlterUserScramCredentials(t *testing.T) {
	base, _ := metadata.NewImage().Apply(nil)
	seed := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	seed.Upsertions = append(seed.Upsertions, upsertion("carol", 1, 4096))
	d := decideAlterUserScramCredentials(seed)(nil, base, time.Now())
	img, delta := base.Apply(d.recs)
	if len(delta.Skipped) != 0 || len(d.recs) != 1 {
		t.Fatalf("seed: %d records, skipped %+v", len(d.recs), delta.Skipped)
	}

	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Upsertions = append(req.Upsertions,
		upsertion("alice", 1, 4096), upsertion("alice", 2, 8192), // ok, both mechanisms
		upsertion("bob", 1, 1000),                              // too few iterations
		upsertion("dave", 1, 4096), upsertion("dave", 1, 4096), // twice
		upsertion("", 1, 4096),     // no name
		upsertion("erin", 7, 4096), // unknown mechanism
	)
	req.Deletions = append(req.Deletions,
		deletion("carol", 1), // ok
		deletion("frank", 2), // not there
	)
	d = decideAlterUserScramCredentials(req)(nil, img, time.Now())
	resp := d.resp.(*kmsg.AlterUserSCRAMCredentialsResponse)
	want := map[string]int16{
		"alice": 0, "carol": 0,
		"bob":   kerr.UnacceptableCredential.Code,
		"dave":  kerr.DuplicateResource.Code,
		"":      kerr.UnacceptableCredential.Code,
		"erin":  kerr.UnsupportedSaslMechanism.Code,
		"frank": kerr.ResourceNotFound.Code,
	}
	if len(resp.Results) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(resp.Results), len(want), resp.Results)
	}
	for _, r := range resp.Results {
		if code, ok := want[r.User]; !ok || code != r.ErrorCode {
			t.Errorf("user %q: code %d, want %d (%v)", r.User, r.ErrorCode, code, r.ErrorMessage)
		}
	}
	next, delta := img.Apply(d.recs)
	if len(delta.Skipped) != 0 {
		t.Fatalf("skipped %+v", delta.Skipped)
	}
	users := next.ScramUsers()
	if len(users) != 1 || users[0].Name != "alice" || len(users[0].Mechanisms) != 2 {
		t.Fatalf("users after: %+v", users)
	}
}

// Through the controller RPC, with read-your-writes, and from the
// bootstrap records.
func TestAlterUserScramCredentialsThroughController(t *testing.T) {
	salted, _ := metadata.SaltPassword(metadata.ScramSHA256, "boot", []byte("bs"), 4096)
	boot, err := metadata.NewScramCredential("admin", metadata.ScramSHA256, []byte("bs"), salted, 4096)
	if err != nil {
		t.Fatal(err)
	}
	tc := startCluster(t, 1, func(c *Config) { c.BootstrapRecords = []metadata.Record{boot} })
	n := tc.nodes[tc.leader(10*time.Second)]
	waitFor(t, 10*time.Second, "bootstrap user", func() bool {
		img, _ := n.Current()
		_, ok := img.ScramCredential("admin", metadata.ScramSHA256)
		return ok
	})
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Upsertions = append(req.Upsertions, upsertion("alice", 2, 4096))
	resp, err := n.Client().AlterUserScramCredentials(ctxT(t, 10*time.Second), req)
	if err != nil || len(resp.Results) != 1 || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("alter: %v %+v", err, resp)
	}
	img, _ := n.Current()
	if _, ok := img.ScramCredential("alice", metadata.ScramSHA512); !ok {
		t.Fatal("alice not in the image after the call returned")
	}
}
