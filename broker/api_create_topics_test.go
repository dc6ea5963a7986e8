package broker

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func createReq(version int16, topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.Topics, req.TimeoutMillis = version, topics, 5000
	return req
}

func newTopic(name string, configs ...string) kmsg.CreateTopicsRequestTopic {
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, -1, -1
	for i := 0; i+1 < len(configs); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = configs[i], strp(configs[i+1])
		t.Configs = append(t.Configs, c)
	}
	return t
}

func TestCreateTopicsLocalChecksAndForwarding(t *testing.T) {
	for v := int16(2); v <= 7; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			fa := &adminCtrl{createTopics: func(req *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse {
				resp := kmsg.NewPtrCreateTopicsResponse()
				resp.Version = 7
				for _, tp := range req.Topics {
					rt := kmsg.NewCreateTopicsResponseTopic()
					rt.Topic, rt.NumPartitions, rt.ReplicationFactor, rt.TopicID = tp.Topic, 3, 1, [16]byte{7}
					if tp.Topic == "bad" {
						rt.ErrorCode, rt.ErrorMessage = kerr.InvalidConfig.Code, strp("retention.ms: not a number")
					}
					tagged(&rt.UnknownTags)
					resp.Topics = append(resp.Topics, rt)
				}
				return resp
			}}
			s := adminServer(t, clusterImage(t, 9001), fa, testConfig(t, "log.retention.hours=48\n"))
			req := createReq(v, newTopic("dup"), newTopic("ok", "cleanup.policy", "compact"), newTopic(metadataTopic), newTopic("dup"), newTopic("bad"))
			req.ValidateOnly = true
			resp := call[*kmsg.CreateTopicsResponse](t, s, req)

			got := map[string]kmsg.CreateTopicsResponseTopic{}
			var order []string
			for _, rt := range resp.Topics {
				got[rt.Topic] = rt
				order = append(order, rt.Topic)
			}
			if fmt.Sprint(order) != "[dup ok __cluster_metadata bad]" {
				t.Fatalf("answer order %v", order)
			}
			fwd := fa.requests()
			if len(fwd) != 1 {
				t.Fatalf("%d controller calls, want 1", len(fwd))
			}
			fr := fwd[0].(*kmsg.CreateTopicsRequest)
			if len(fr.Topics) != 2 || fr.Topics[0].Topic != "ok" || fr.Topics[1].Topic != "bad" || !fr.ValidateOnly || fr.TimeoutMillis != 5000 {
				t.Fatalf("forwarded %+v", fr)
			}
			for _, name := range []string{"dup", metadataTopic} {
				if rt := got[name]; rt.ErrorCode != kerr.InvalidRequest.Code || (v >= 1 && rt.ErrorMessage == nil) {
					t.Errorf("%s: code %d message %v, want INVALID_REQUEST with a message", name, rt.ErrorCode, rt.ErrorMessage)
				}
			}
			bad := got["bad"]
			if bad.ErrorCode != kerr.InvalidConfig.Code || deref(bad.ErrorMessage) != "retention.ms: not a number" {
				t.Errorf("bad: %d %s", bad.ErrorCode, deref(bad.ErrorMessage))
			}
			ok := got["ok"]
			if ok.ErrorCode != 0 || ok.UnknownTags.Len() != 0 {
				t.Fatalf("ok: code %d, %d tags", ok.ErrorCode, ok.UnknownTags.Len())
			}
			if v < 5 {
				if len(ok.Configs) != 0 {
					t.Errorf("configs below v5")
				}
				return
			}
			if ok.NumPartitions != 3 || ok.ReplicationFactor != 1 || bad.NumPartitions != -1 || bad.ReplicationFactor != -1 || len(bad.Configs) != 0 {
				t.Errorf("partitions/rf: ok %d/%d bad %d/%d", ok.NumPartitions, ok.ReplicationFactor, bad.NumPartitions, bad.ReplicationFactor)
			}
			if v >= 7 && ok.TopicID != [16]byte{7} {
				t.Errorf("topic id %v", ok.TopicID)
			}
			sources := map[string]kmsg.CreateTopicsResponseTopicConfig{}
			for _, c := range ok.Configs {
				sources[c.Name] = c
			}
			// Kafka lists every topic config, not only the overrides.
			for _, d := range metadata.TopicConfigDefs() {
				if c, found := sources[d.Name]; !found || c.Value == nil || c.Source == 0 {
					t.Errorf("config %s missing or without value and source: %+v", d.Name, c)
				}
			}
			for name, want := range map[string]struct {
				value  string
				source int8
			}{
				"cleanup.policy":      {"compact", 1},            // the request's own setting
				"retention.ms":        {"172800000", 4},          // log.retention.hours in server.properties
				"min.insync.replicas": {"1", 5},                  // built-in default
				"max.message.bytes":   {sourceValue(sources), 5}, // present, whatever the default
			} {
				c, found := sources[name]
				if !found {
					t.Errorf("config %s missing from the v5+ answer", name)
					continue
				}
				if deref(c.Value) != want.value || c.Source != want.source {
					t.Errorf("%s = %s (source %d), want %s (source %d)", name, deref(c.Value), c.Source, want.value, want.source)
				}
			}
		})
	}
}

// sourceValue returns whatever max.message.bytes was answered with, so the
// table above checks its presence and source without restating a default.
func sourceValue(m map[string]kmsg.CreateTopicsResponseTopicConfig) string {
	return deref(m["max.message.bytes"].Value)
}

func TestCreateTopicsControllerFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		fa   *adminCtrl
		code int16
	}{
		{"deadline", &adminCtrl{err: fmt.Errorf("waiting: %w", context.DeadlineExceeded)}, kerr.RequestTimedOut.Code},
		{"controller error", &adminCtrl{err: kerr.NotController}, kerr.NotController.Code},
		{"unknown failure", &adminCtrl{err: errors.New("boom")}, kerr.UnknownServerError.Code},
		{"no controller", nil, kerr.NotController.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := adminServer(t, clusterImage(t, 9001), tc.fa, nil)
			resp := call[*kmsg.CreateTopicsResponse](t, s, createReq(7, newTopic("a"), newTopic("b")))
			if len(resp.Topics) != 2 {
				t.Fatalf("%d answers", len(resp.Topics))
			}
			for _, rt := range resp.Topics {
				if rt.ErrorCode != tc.code || rt.ErrorMessage == nil || rt.NumPartitions != -1 || len(rt.Configs) != 0 {
					t.Errorf("%s: code %d msg %v partitions %d", rt.Topic, rt.ErrorCode, rt.ErrorMessage, rt.NumPartitions)
				}
			}
		})
	}
}

func TestCreateTopicsMissingAnswerIsReported(t *testing.T) {
	fa := &adminCtrl{createTopics: func(req *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse {
		return kmsg.NewPtrCreateTopicsResponse()
	}}
	s := adminServer(t, clusterImage(t, 9001), fa, nil)
	resp := call[*kmsg.CreateTopicsResponse](t, s, createReq(4, newTopic("a")))
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.UnknownServerError.Code {
		t.Fatalf("answer %+v", resp.Topics)
	}
}

// A timeout of 0 or less is a deadline already past for Kafka's KRaft
// controller: nothing reaches it, and every entry is REQUEST_TIMED_OUT;
// a request with nothing to forward keeps its local answers.
func TestCreateTopicsTimeoutZero(t *testing.T) {
	for _, timeout := range []int32{0, -1} {
		for _, validateOnly := range []bool{false, true} {
			t.Run(fmt.Sprintf("timeout=%d/validateOnly=%v", timeout, validateOnly), func(t *testing.T) {
				fa := &adminCtrl{}
				s := adminServer(t, clusterImage(t, 9001), fa, nil)
				req := createReq(7, newTopic("a"), newTopic("dup"), newTopic("dup"), newTopic(metadataTopic))
				req.TimeoutMillis, req.ValidateOnly = timeout, validateOnly
				resp := call[*kmsg.CreateTopicsResponse](t, s, req)
				var order []string
				for _, rt := range resp.Topics {
					order = append(order, rt.Topic)
					if rt.ErrorCode != kerr.RequestTimedOut.Code || rt.ErrorMessage != nil || rt.NumPartitions != -1 || rt.ReplicationFactor != -1 {
						t.Errorf("%s: %d %v %d/%d, want REQUEST_TIMED_OUT, no message, -1/-1", rt.Topic, rt.ErrorCode, rt.ErrorMessage, rt.NumPartitions, rt.ReplicationFactor)
					}
				}
				if fmt.Sprint(order) != "[a dup dup __cluster_metadata]" {
					t.Fatalf("answers %v, want one per entry", order)
				}
				if n := len(fa.requests()); n != 0 {
					t.Fatalf("%d controller calls, want none", n)
				}
			})
		}
	}
	fa := &adminCtrl{}
	s := adminServer(t, clusterImage(t, 9001), fa, nil)
	req := createReq(7, newTopic("dup"), newTopic("dup"))
	req.TimeoutMillis = 0
	resp := call[*kmsg.CreateTopicsResponse](t, s, req)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("only duplicates: %+v, want one INVALID_REQUEST", resp.Topics)
	}
}

// heldCommit is a controller whose CreateTopics commits at once and whose
// WaitServed (this node applying the commit) waits for serve.
type heldCommit struct {
	serve chan struct{}
}

func (h *heldCommit) CreateTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, error) {
	resp, _, err := h.CreateTopicsCommitted(ctx, req)
	if err == nil {
		err = h.WaitServed(ctx, 2)
	}
	return resp, err
}

func (h *heldCommit) CreateTopicsCommitted(_ context.Context, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, uint64, error) {
	resp := kmsg.NewPtrCreateTopicsResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.Topic, 1, 1
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, 2, nil
}

func (h *heldCommit) WaitServed(ctx context.Context, _ uint64) error {
	select {
	case <-h.serve:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestCreateTopicsReleasesConnectionOnceCommitted: the connection's next
// request may start once the controller has committed, while this one still
// waits for this node to serve the topic, and the answer waits for that.
func TestCreateTopicsReleasesConnectionOnceCommitted(t *testing.T) {
	h := &heldCommit{serve: make(chan struct{})}
	s, err := newServer(Options{Logger: testLogger(t), NodeID: 1, Deps: Deps{Metadata: staticMetadata{img: clusterImage(t, 9001), index: 1}, Controller: h}}, defaultAPIs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	req := createReq(7, newTopic("a"))
	rc := &request{conn: &connState{srv: s, listener: "CLIENT"}, key: req.Key(), version: req.GetVersion(), released: make(chan struct{})}
	answered := make(chan *kmsg.CreateTopicsResponse, 1)
	go func() {
		resp, err := s.table.lookup(req.Key()).handle(context.Background(), rc, req)
		if err != nil {
			t.Error(err)
		}
		answered <- resp.(*kmsg.CreateTopicsResponse)
	}()
	select {
	case <-rc.released:
	case <-time.After(10 * time.Second):
		t.Fatal("the connection was not released after the commit")
	}
	select {
	case <-answered:
		t.Fatal("answered before this node served the topic")
	case <-time.After(50 * time.Millisecond):
	}
	close(h.serve)
	resp := <-answered
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("answer %+v", resp.Topics)
	}
}
