package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// controllerClient is a kgo client seeded with one controller listener
// only; requests go straight to it (Broker.Request), as Kafka's admin
// client does with bootstrap.controllers: controllers serve no Metadata
// for kgo to route by.
func controllerClient(t *testing.T, addr string, opts ...kgo.Opt) (*kgo.Client, *kgo.Broker) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, cl.SeedBrokers()[0]
}

// describeControllers sends DescribeCluster with the CONTROLLER endpoint
// type (KIP-919).
func describeControllers(ctx context.Context, b *kgo.Broker, endpointType int8) (*kmsg.DescribeClusterResponse, error) {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.EndpointType, req.IncludeClusterAuthorizedOperations = endpointType, true
	resp, err := b.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.DescribeClusterResponse), nil
}

// checkControllers: the answer lists exactly the voters' controller
// endpoints and names the Raft leader among them.
func checkControllers(resp *kmsg.DescribeClusterResponse, clusterID string, voters []*cluster.Node) error {
	if resp.ErrorCode != 0 {
		return fmt.Errorf("DescribeCluster: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if resp.ClusterID != clusterID || resp.EndpointType != 2 {
		return fmt.Errorf("DescribeCluster: cluster %q endpoint type %d, want %q and 2", resp.ClusterID, resp.EndpointType, clusterID)
	}
	var got, want []string
	for _, b := range resp.Brokers {
		got = append(got, fmt.Sprintf("%d@%s", b.NodeID, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))))
	}
	for _, n := range voters {
		want = append(want, fmt.Sprintf("%d@%s", n.ID(), n.ControllerAddr()))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("DescribeCluster lists %v, want the voters %v", got, want)
	}
	if !slices.ContainsFunc(voters, func(n *cluster.Node) bool { return n.ID() == resp.ControllerID }) {
		return fmt.Errorf("DescribeCluster names controller %d, not a voter", resp.ControllerID)
	}
	return nil
}

// The controller listener as Kafka 4.1's --bootstrap-controller tools use
// it, on a PLAINTEXT cluster without an authorizer: DescribeCluster of the
// controllers, the features in ApiVersions, DescribeQuorum, topic and
// config changes sent straight to a controller, DescribeAcls answered
// SECURITY_DISABLED; and the raftka CLI's --bootstrap-controller.
func TestControllerListenerAdminPlaintext(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t)
	ctx := ctxFor(t, 2*time.Minute)
	nodes := c.Nodes()
	ctrl := nodes[1].ControllerAddr() // not necessarily the leader: answers or forwards
	_, b := controllerClient(t, ctrl)

	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		resp, err := describeControllers(ctx, b, 2)
		if err != nil {
			return false, err.Error()
		}
		if err := checkControllers(resp, c.ClusterID(), nodes); err != nil {
			return false, err.Error()
		}
		if resp.ClusterAuthorizedOperations <= 0 {
			return false, fmt.Sprintf("cluster authorized operations %d without an authorizer", resp.ClusterAuthorizedOperations)
		}
		return true, ""
	})
	resp, err := describeControllers(ctx, b, 1)
	if err != nil || resp.ErrorCode != kerr.MismatchedEndpointType.Code {
		t.Fatalf("DescribeCluster with the BROKER endpoint type on a controller: %v %v, want MISMATCHED_ENDPOINT_TYPE", err, kerr.ErrorForCode(resp.ErrorCode))
	}

	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	avr, err := b.Request(ctx, av)
	if err != nil {
		t.Fatal(err)
	}
	finalized := map[string]int16{}
	for _, f := range avr.(*kmsg.ApiVersionsResponse).FinalizedFeatures {
		finalized[f.Name] = f.MaxVersionLevel
	}
	if finalized["metadata.version"] <= 0 {
		t.Fatalf("controller ApiVersions v3 finalized features %v: no metadata.version", finalized)
	}

	// A topic created and configured through the controller alone.
	const topic = "made-on-the-controller"
	ct := kmsg.NewPtrCreateTopicsRequest()
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = topic, 2, 3
	ct.Topics, ct.TimeoutMillis = append(ct.Topics, ctt), 30000
	ctr, err := b.Request(ctx, ct)
	if err != nil || ctr.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics on the controller listener: %v %+v", err, ctr)
	}
	ia := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = "retention.ms", kmsg.StringPtr("3600000")
	res.Configs = append(res.Configs, cfg)
	ia.Resources = append(ia.Resources, res)
	iar, err := b.Request(ctx, ia)
	if err != nil || iar.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode != 0 {
		t.Fatalf("IncrementalAlterConfigs on the controller listener: %v %+v", err, iar)
	}
	adm := kadm.NewClient(client(t, c))
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		rc, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		v, err := rc.On(topic, nil)
		if err != nil {
			return false, err.Error()
		}
		for _, kv := range v.Configs {
			if kv.Key == "retention.ms" && kv.MaybeValue() == "3600000" {
				return true, ""
			}
		}
		return false, "retention.ms not yet 3600000 on the brokers"
	})

	// DescribeConfigs: the answering node's own broker config, and the
	// topic's, as its broker would answer.
	dc := kmsg.NewPtrDescribeConfigsRequest()
	for _, r := range []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(nodes[1].ID()))}, {kmsg.ConfigResourceTypeTopic, topic}} {
		dr := kmsg.NewDescribeConfigsRequestResource()
		dr.ResourceType, dr.ResourceName = r.typ, r.name
		dc.Resources = append(dc.Resources, dr)
	}
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		dcr, err := b.Request(ctx, dc)
		if err != nil {
			return false, err.Error()
		}
		got := map[string]string{}
		for _, res := range dcr.(*kmsg.DescribeConfigsResponse).Resources {
			if res.ErrorCode != 0 {
				return false, fmt.Sprintf("DescribeConfigs %s %s: %v", res.ResourceType, res.ResourceName, kerr.ErrorForCode(res.ErrorCode))
			}
			for _, c := range res.Configs {
				if c.Value != nil {
					got[res.ResourceType.String()+"/"+c.Name] = *c.Value
				}
			}
		}
		if got["BROKER/node.id"] != strconv.Itoa(int(nodes[1].ID())) || got["TOPIC/retention.ms"] != "3600000" {
			return false, fmt.Sprintf("DescribeConfigs on the controller: node.id %q, retention.ms %q", got["BROKER/node.id"], got["TOPIC/retention.ms"])
		}
		return true, ""
	})

	da := kmsg.NewPtrDescribeACLsRequest()
	da.ResourceType, da.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	da.Operation, da.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	dr, err := b.Request(ctx, da)
	if err != nil || dr.(*kmsg.DescribeACLsResponse).ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("DescribeAcls on a controller without an authorizer: %v %+v, want SECURITY_DISABLED", err, dr)
	}

	// The CLI, as kafka-cluster.sh, kafka-features.sh and
	// kafka-metadata-quorum.sh with --bootstrap-controller.
	out, err := cluster.Run(t, "cluster", "id", "--bootstrap-controller", ctrl)
	if err != nil || !strings.Contains(out, "Cluster ID: "+c.ClusterID()) {
		t.Fatalf("cluster id --bootstrap-controller: %v\n%s", err, out)
	}
	out, err = cluster.Run(t, "features", "describe", "--bootstrap-controller", ctrl)
	if err != nil || !strings.Contains(out, "metadata.version") {
		t.Fatalf("features describe --bootstrap-controller: %v\n%s", err, out)
	}
	out, err = cluster.Run(t, "cluster", "status", "--bootstrap-controller", ctrl)
	if err != nil || !strings.Contains(out, "Raft leader:") || strings.Contains(out, "Brokers:") {
		t.Fatalf("cluster status --bootstrap-controller: %v\n%s\nwant the quorum and no brokers table (the answer lists controllers)", err, out)
	}
	if out, err := cluster.Run(t, "cluster", "id", "--bootstrap-controller", ctrl, "--bootstrap-server", nodes[0].ClientAddr()); err == nil {
		t.Fatalf("both --bootstrap-server and --bootstrap-controller accepted:\n%s", out)
	}

	// kafka-configs.sh --bootstrap-controller for quotas and SCRAM users:
	// controllers serve the Alter requests, and the Describe ones only
	// through a broker.
	out, err = cluster.Run(t, "quotas", "set", "--bootstrap-controller", ctrl, "--client-id", "ctrl-cli", "--add-config", "producer_byte_rate=4096")
	if err != nil || !strings.Contains(out, "Completed updating quotas for client-id='ctrl-cli'") {
		t.Fatalf("quotas set --bootstrap-controller: %v\n%s", err, out)
	}
	cluster.WaitFor(t, 10*time.Second, func() (bool, string) {
		out, err := cluster.Run(t, "quotas", "describe", "--bootstrap-server", nodes[0].ClientAddr(), "--client-id", "ctrl-cli")
		return err == nil && strings.Contains(out, "producer_byte_rate=4096"), fmt.Sprintf("quotas describe through a broker: %v\n%s", err, out)
	})
	if out, err := cluster.Run(t, "quotas", "describe", "--bootstrap-controller", ctrl); err == nil || !strings.Contains(out, "controllers do not serve DescribeClientQuotas") {
		t.Fatalf("quotas describe --bootstrap-controller: %v\n%s\nwant the refusal that says to ask a broker", err, out)
	}
	out, err = cluster.Run(t, "users", "scram", "set", "--bootstrap-controller", ctrl, "--user", "carol", "--mechanism", "SCRAM-SHA-256", "--password", "carol-secret")
	if err != nil || !strings.Contains(out, "Completed updating config for user carol.") {
		t.Fatalf("users scram set --bootstrap-controller: %v\n%s", err, out)
	}
	cluster.WaitFor(t, 10*time.Second, func() (bool, string) {
		out, err := cluster.Run(t, "users", "scram", "describe", "--bootstrap-server", nodes[0].ClientAddr(), "--user", "carol")
		return err == nil && strings.Contains(out, "SCRAM-SHA-256=iterations="), fmt.Sprintf("users scram describe through a broker: %v\n%s", err, out)
	})
	if out, err := cluster.Run(t, "users", "scram", "delete", "--bootstrap-controller", ctrl, "--user", "carol"); err == nil || !strings.Contains(out, "name the mechanisms") {
		t.Fatalf("users scram delete --bootstrap-controller without --mechanism: %v\n%s", err, out)
	}
	out, err = cluster.Run(t, "users", "scram", "delete", "--bootstrap-controller", ctrl, "--user", "carol", "--mechanism", "SCRAM-SHA-256")
	if err != nil || !strings.Contains(out, "Completed updating config for user carol.") {
		t.Fatalf("users scram delete --bootstrap-controller: %v\n%s", err, out)
	}
}

// controllerAdminSASLSSL: a SCRAM user who is no broker, on the SASL_SSL
// controller listener, gets what its ACLs allow as Kafka's ControllerApis
// check them: DescribeCluster needs ALTER on the cluster, CreateTopics
// CREATE on the topic (one topic of a request refused, the other made),
// and the admin's raftka CLI works over --bootstrap-controller with
// --command-config. Run from TestControllerListenerSASLSSL.
func controllerAdminSASLSSL(t *testing.T, ctx context.Context, sc *saslSSLCluster, admin *kgo.Client, alicePw string) {
	nodes := sc.c.Nodes()
	ctrl := nodes[0].ControllerAddr()
	voters := nodes[:3] // the fourth is broker-only
	_, alice := controllerClient(t, ctrl, kgo.DialTLSConfig(&tls.Config{RootCAs: sc.pool}),
		kgo.SASL(scram.Auth{User: "alice", Pass: alicePw}.AsSha512Mechanism()))

	resp, err := describeControllers(ctx, alice, 2)
	if err != nil || resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("DescribeCluster from alice without ACLs: %v %v, want CLUSTER_AUTHORIZATION_FAILED", err, resp)
	}
	createTopics := func(names ...string) map[string]int16 {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		for _, n := range names {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = n, 1, 3
			req.Topics = append(req.Topics, rt)
		}
		req.TimeoutMillis = 30000
		resp, err := alice.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int16{}
		for _, rt := range resp.(*kmsg.CreateTopicsResponse).Topics {
			out[rt.Topic] = rt.ErrorCode
		}
		return out
	}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(nodes[0].ID()))
	dc.Resources = append(dc.Resources, dr)
	dcr, err := alice.Request(ctx, dc)
	if err != nil || len(dcr.(*kmsg.DescribeConfigsResponse).Resources) != 1 ||
		dcr.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("DescribeConfigs of a broker from alice without ACLs: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, dcr)
	}
	if got := createTopics("alice-1"); got["alice-1"] != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("CreateTopics from alice without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", got)
	}

	adm := kadm.NewClient(admin)
	acls := kadm.NewACLs().Allow("User:alice").AllowHosts("*")
	if _, err := adm.CreateACLs(ctx, acls.Clusters().Operations(kadm.OpAlter)); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("alice-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpCreate)); err != nil {
		t.Fatal(err)
	}
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		resp, err := describeControllers(ctx, alice, 2)
		if err != nil {
			return false, err.Error()
		}
		if err := checkControllers(resp, sc.c.ClusterID(), voters); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		got := createTopics("alice-2", "bob-2")
		if got["alice-2"] != 0 && got["alice-2"] != kerr.TopicAlreadyExists.Code || got["bob-2"] != kerr.TopicAuthorizationFailed.Code {
			return false, fmt.Sprintf("CreateTopics alice-2, bob-2 from alice: %v, want alice-2 made and bob-2 TOPIC_AUTHORIZATION_FAILED", got)
		}
		return true, ""
	})
	// The controller answers at the commit; the brokers learn it after.
	cluster.WaitFor(t, 20*time.Second, func() (bool, string) {
		topics, err := adm.ListTopics(ctx)
		if err != nil {
			return false, err.Error()
		}
		if !topics.Has("alice-2") || topics.Has("bob-2") {
			return false, fmt.Sprintf("topics after alice's CreateTopics: %v, want alice-2 and no bob-2", topics.Names())
		}
		return true, ""
	})

	// The admin's CLI over the SASL_SSL controller listener.
	conf := filepath.Join(t.TempDir(), "admin.properties")
	if err := os.WriteFile(conf, []byte("security.protocol=SASL_SSL\nsasl.mechanism="+secureMech+"\n"+
		"sasl.jaas.config="+scramJAAS("admin", adminPassword)+"\nssl.truststore.type=PEM\nssl.truststore.location="+sc.trust+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := cluster.Run(t, "cluster", "id", "--bootstrap-controller", ctrl, "--command-config", conf)
	if err != nil || !strings.Contains(out, "Cluster ID: "+sc.c.ClusterID()) {
		t.Fatalf("cluster id --bootstrap-controller over SASL_SSL: %v\n%s", err, out)
	}
	out, err = cluster.Run(t, "acls", "list", "--bootstrap-controller", ctrl, "--command-config", conf, "--topic", "alice-", "--resource-pattern-type", "prefixed")
	if err != nil || !strings.Contains(out, "User:alice") {
		t.Fatalf("acls list --bootstrap-controller over SASL_SSL: %v\n%s", err, out)
	}
}
