package broker

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeScramAdmin answers every upsertion and deletion with success and
// records what it was sent.
type fakeScramAdmin struct {
	got *kmsg.AlterUserSCRAMCredentialsRequest
}

func (f *fakeScramAdmin) AlterUserScramCredentials(_ context.Context, req *kmsg.AlterUserSCRAMCredentialsRequest) (*kmsg.AlterUserSCRAMCredentialsResponse, error) {
	f.got = req
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	for _, u := range req.Upsertions {
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = u.Name
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}

func TestScramCredentialAPIs(t *testing.T) {
	fake := &fakeScramAdmin{}
	_, addr := startServer(t, defaultAPIs, Options{Deps: Deps{Metadata: staticMetadata{img: scramImage(t)}, Scram: fake}})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()

	all, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil || len(all) != 2 || len(all["alice"].CredInfos) != 2 || len(all["bob"].CredInfos) != 1 || all["bob"].CredInfos[0].Iterations != 4096 {
		t.Fatalf("describe all: %v %+v", err, all)
	}
	some, err := adm.DescribeUserSCRAMs(ctx, "bob", "nobody")
	if err != nil || some["bob"].Err != nil || some["nobody"].Err != kerr.ResourceNotFound {
		t.Fatalf("describe some: %v %+v", err, some)
	}
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, u := range []string{"bob", "bob"} {
		ru := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		ru.Name = u
		req.Users = append(req.Users, ru)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Results) != 1 || resp.Results[0].ErrorCode != kerr.DuplicateResource.Code {
		t.Fatalf("describe twice: %v %+v", err, resp)
	}

	// Alter goes to the controller in kgo's routing, which a server with a
	// static image has none of; send it straight to this broker.
	r := dialRaw(t, addr)
	alter := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = "carol", 2, 4096, []byte("s"), make([]byte, 64)
	alter.Upsertions = append(alter.Upsertions, up)
	r.send(alter, 7)
	aresp := kmsg.NewPtrAlterUserSCRAMCredentialsResponse()
	if corr := r.readResponse(aresp); corr != 7 || len(aresp.Results) != 1 || aresp.Results[0].User != "carol" || aresp.Results[0].ErrorCode != 0 {
		t.Fatalf("alter: corr %d %+v", corr, aresp)
	}
	if fake.got == nil || len(fake.got.Upsertions) != 1 || len(fake.got.Upsertions[0].SaltedPassword) != 64 {
		t.Fatalf("forwarded %+v", fake.got)
	}
	// Without a controller client every user is answered NOT_CONTROLLER.
	_, addr2 := startServer(t, defaultAPIs, Options{})
	r2 := dialRaw(t, addr2)
	r2.send(alter, 8)
	aresp = kmsg.NewPtrAlterUserSCRAMCredentialsResponse()
	if r2.readResponse(aresp); len(aresp.Results) != 1 || aresp.Results[0].ErrorCode != kerr.NotController.Code {
		t.Fatalf("alter without a controller: %+v", aresp)
	}
}
