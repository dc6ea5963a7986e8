package broker

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// anonACL is an ACL for the principal of a plaintext connection.
func anonACL(id byte, rt metadata.ACLResourceType, name string, pt metadata.ACLPatternType, op metadata.ACLOperation, perm metadata.ACLPermission) metadata.Record {
	return &metadata.AccessControlEntry{ID: [16]byte{id, 0xac}, ACLBinding: metadata.ACLBinding{
		ResourceType: rt, ResourceName: name, PatternType: pt, Principal: "User:ANONYMOUS", Host: "*", Operation: op, Permission: perm}}
}

// authorizedServer serves clusterImage plus the ACL records with the
// StandardAuthorizer, and returns a client on it.
func authorizedServer(t *testing.T, acls ...metadata.Record) (*kgo.Client, context.Context) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(authorizedAddr(t, acls...)), kgo.RetryTimeout(testDeadline))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	t.Cleanup(cancel)
	return cl, ctx
}

// authorizedAddr starts that server and returns its address.
func authorizedAddr(t *testing.T, acls ...metadata.Record) string {
	t.Helper()
	md := &swappableMetadata{}
	md.cur.Store(clusterImage(t, 0))
	_, addr := startServer(t, defaultAPIs, Options{NodeID: 1, Authorizer: &metadata.Authorizer{}, Deps: Deps{Metadata: md}})
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	img, d := clusterImage(t, ap.Port()).Apply(acls)
	if len(d.Skipped) != 0 {
		t.Fatalf("skipped %+v", d.Skipped)
	}
	md.cur.Store(img)
	return addr
}

// Metadata lists only the topics the principal may DESCRIBE, and answers
// a named one it may not TOPIC_AUTHORIZATION_FAILED whether or not it
// exists; the KIP-430 sets come from the ACLs.
func TestMetadataHidesUndescribableTopics(t *testing.T) {
	cl, ctx := authorizedServer(t, anonACL(1, metadata.ACLResourceTopic, "ord", metadata.ACLPatternPrefixed, metadata.ACLOpRead, metadata.ACLPermissionAllow))
	req := kmsg.NewPtrMetadataRequest()
	req.IncludeTopicAuthorizedOperations = true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || *resp.Topics[0].Topic != "orders" {
		t.Fatalf("listed %+v, want only orders", resp.Topics)
	}
	if got, want := resp.Topics[0].AuthorizedOperations, opSet(opRead, opDescribe); got != want {
		t.Fatalf("authorized operations %b, want %b", got, want)
	}
	named := kmsg.NewPtrMetadataRequest()
	for _, n := range []string{"orders", "__consumer_offsets", "absent"} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		named.Topics = append(named.Topics, rt)
	}
	named.AllowAutoTopicCreation = true
	nresp, err := named.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int16{"orders": 0, "__consumer_offsets": kerr.TopicAuthorizationFailed.Code, "absent": kerr.TopicAuthorizationFailed.Code}
	for _, rt := range nresp.Topics {
		if rt.ErrorCode != want[*rt.Topic] {
			t.Errorf("%s: %v, want %v", *rt.Topic, kerr.ErrorForCode(rt.ErrorCode), kerr.ErrorForCode(want[*rt.Topic]))
		}
	}
}

// A principal without CLUSTER_ACTION fetching as a replica gets
// TOPIC_AUTHORIZATION_FAILED on every partition; a consumer without READ
// the same; ListOffsets without DESCRIBE too.
func TestFetchAuthorization(t *testing.T) {
	cl, ctx := authorizedServer(t, anonACL(1, metadata.ACLResourceTopic, "orders", metadata.ACLPatternLiteral, metadata.ACLOpDescribe, metadata.ACLPermissionAllow))
	for _, replica := range []int32{1, -1} {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.ReplicaState.ID = replica, replica
		req.MaxWaitMillis = 0
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "orders", ordersID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = 0
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("replica %d: %+v", replica, resp.Topics)
		}
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "__consumer_offsets"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	// kgo looks the leader up in Metadata first, which refuses the same.
	lresp, err := lo.RequestWith(ctx, cl)
	if !errors.Is(err, kerr.TopicAuthorizationFailed) && (err != nil || lresp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code) {
		t.Fatalf("list offsets: %v %+v", err, lresp)
	}
}

// Produce without WRITE is TOPIC_AUTHORIZATION_FAILED, and a DENY wins
// over an ALLOW; nothing reaches the partition layer (there is none).
func TestProduceAuthorization(t *testing.T) {
	cl, ctx := authorizedServer(t,
		anonACL(1, metadata.ACLResourceTopic, "*", metadata.ACLPatternLiteral, metadata.ACLOpWrite, metadata.ACLPermissionAllow),
		anonACL(2, metadata.ACLResourceTopic, "orders", metadata.ACLPatternLiteral, metadata.ACLOpWrite, metadata.ACLPermissionDeny))
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 1000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = "orders", ordersID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = []byte{}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("%v %+v", err, resp)
	}
	// InitProducerId: WRITE on some topic (the wildcard) is enough; this
	// server has no controller to allocate ids, so it answers a retriable
	// COORDINATOR_LOAD_IN_PROGRESS, which is not a refusal.
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.ProducerID, ip.ProducerEpoch = -1, -1
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := ip.RequestWith(sctx, cl); errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("init producer id: %v", err)
	}
}

// Group APIs need READ (DESCRIBE for OffsetFetch, DescribeGroups and
// FindCoordinator) on the group: GROUP_AUTHORIZATION_FAILED otherwise.
func TestGroupAuthorization(t *testing.T) {
	cl, ctx := authorizedServer(t)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "g"
	fresp, err := fc.RequestWith(ctx, cl)
	if err != nil || fresp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("find coordinator: %v %+v", err, fresp)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group = "g"
	// kgo finds the coordinator first, which the same rule refuses.
	if _, err := hb.RequestWith(ctx, cl); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("heartbeat: %v", err)
	}
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.ProducerID, ip.ProducerEpoch = -1, -1
	iresp, err := ip.RequestWith(ctx, cl)
	if err != nil || iresp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("init producer id without WRITE anywhere: %v %+v", err, iresp)
	}
}

func TestACLHostIsJavas(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:9092":      "127.0.0.1",
		"[::1]:9092":          "0:0:0:0:0:0:0:1",
		"[fe80::a:b0c]:1":     "fe80:0:0:0:0:0:a:b0c",
		"[::ffff:10.0.0.1]:1": "10.0.0.1",
		"not-an-address":      "",
	} {
		var a net.Addr
		if ap, err := netip.ParseAddrPort(in); err == nil {
			a = net.TCPAddrFromAddrPort(ap)
		} else {
			a = &net.UnixAddr{Name: in}
		}
		if got := aclHost(a); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
	if aclHost(nil) != "" {
		t.Error("nil address")
	}
}
