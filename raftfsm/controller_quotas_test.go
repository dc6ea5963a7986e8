package raftfsm

import (
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func quotaEntry(parts [][2]*string, ops ...kmsg.AlterClientQuotasRequestEntryOp) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	for _, p := range parts {
		en := kmsg.NewAlterClientQuotasRequestEntryEntity()
		en.Type, en.Name = *p[0], p[1]
		e.Entity = append(e.Entity, en)
	}
	e.Ops = ops
	return e
}

func quotaOp(key string, v float64, remove bool) kmsg.AlterClientQuotasRequestEntryOp {
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value, op.Remove = key, v, remove
	return op
}

func TestDecideAlterClientQuotas(t *testing.T) {
	s := kmsg.StringPtr
	user, client := s("user"), s("client-id")
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries = []kmsg.AlterClientQuotasRequestEntry{
		quotaEntry([][2]*string{{user, s("alice")}}, quotaOp("producer_byte_rate", 1024, false), quotaOp("consumer_byte_rate", 2048, false)),
		quotaEntry([][2]*string{{client, nil}}, quotaOp("consumer_byte_rate", 10, false), quotaOp("producer_byte_rate", 0, true)),    // remove of an unset key: fine
		quotaEntry([][2]*string{{user, s("bob")}}, quotaOp("producer_byte_rate", 1, false), quotaOp("producer_byte_rate", 2, false)), // twice
		quotaEntry([][2]*string{{user, s("bob")}, {s("ip"), s("1.1.1.1")}}, quotaOp("producer_byte_rate", 1, false)),                 // ip with user
		quotaEntry([][2]*string{{user, s("bob")}}, quotaOp("request_percentage", 50, false)),                                         // enforced too
		quotaEntry([][2]*string{{s("ip"), nil}}, quotaOp("request_percentage", 50, false)),                                           // not an ip key
		quotaEntry([][2]*string{{user, s("bob")}}, quotaOp("producer_byte_rate", -5, false)),
	}
	d := decideAlterClientQuotas(req)(nil, metadata.NewImage(), time.Now())
	got := d.resp.(*kmsg.AlterClientQuotasResponse).Entries
	want := []int16{0, 0, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, 0, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}
	for i := range want {
		if got[i].ErrorCode != want[i] {
			t.Errorf("entry %d: %v, want %v (%v)", i, kerr.ErrorForCode(got[i].ErrorCode), kerr.ErrorForCode(want[i]), got[i].ErrorMessage)
		}
	}
	if len(d.recs) != 4 {
		t.Fatalf("%d records, want 4", len(d.recs))
	}
	img, delta := metadata.NewImage().Apply(d.recs)
	if len(delta.Skipped) != 0 {
		t.Fatal(delta.Skipped)
	}
	if q, ok := img.ResolveQuota("alice", "any", "producer_byte_rate"); !ok || q.Value != 1024 {
		t.Fatalf("%+v", q)
	}
	// Removing a set key writes a removal; validate_only writes nothing.
	rm := kmsg.NewPtrAlterClientQuotasRequest()
	rm.Entries = append(rm.Entries, quotaEntry([][2]*string{{user, s("alice")}}, quotaOp("producer_byte_rate", 0, true)))
	if d := decideAlterClientQuotas(rm)(nil, img, time.Now()); len(d.recs) != 1 {
		t.Fatalf("removal wrote %d records", len(d.recs))
	}
	req.ValidateOnly = true
	if d := decideAlterClientQuotas(req)(nil, metadata.NewImage(), time.Now()); len(d.recs) != 0 {
		t.Fatalf("validate_only wrote %d records", len(d.recs))
	}
}
