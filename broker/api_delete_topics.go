package broker

// DeleteTopics (key 20): v1-v6, as Kafka 4.2 (v0 was removed in 4.0),
// forwarded to the active controller.
//
// Behaviour (Kafka's ControllerApis.deleteTopics):
//   - Topics are named by name, or from v6 by name or id. An entry with both
//     a name and an id, a name or id given more than once, or a v6 entry
//     with neither is answered INVALID_REQUEST and not deleted; a name or
//     id given more than once is answered once, as Kafka answers each
//     duplicate name or id (an entry with both counts as neither).
//   - The rest go to the controller in one call, bounded by TimeoutMillis:
//     an unknown name is UNKNOWN_TOPIC_OR_PARTITION, an unknown id
//     UNKNOWN_TOPIC_ID. With delete.topic.enable=false the controller
//     answers TOPIC_DELETION_DISABLED, which below v3 (where clients do not
//     know that code) becomes INVALID_REQUEST, as in Kafka.
//   - Once the call returns the topics are gone from this broker's image.
//
// Version notes:
//   - v4: flexible. v5: ErrorMessage. v6: Topics with name or id replace
//     TopicNames, and the answer carries TopicID (the id of a topic deleted
//     by name too).

import (
	"context"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{
		key:           20,
		advertisedMin: 1, min: 1, max: 6,
		concurrent: false, // later requests on the connection must see the deletion
		handle:     handleDeleteTopics,
	})
}

// deleteTarget is one entry of the request, in v6's form.
type deleteTarget struct {
	name *string
	id   [16]byte
}

func handleDeleteTopics(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	srv := rc.conn.srv

	var targets []deleteTarget
	if req.Version >= 6 {
		for _, t := range req.Topics {
			targets = append(targets, deleteTarget{name: t.Topic, id: t.TopicID})
		}
	} else {
		for _, n := range req.TopicNames {
			targets = append(targets, deleteTarget{name: kmsg.StringPtr(n)})
		}
	}

	img := rc.authImage()
	mq := rc.mutationQuota() // controller_mutation_rate (quota.go)
	charged := map[int]int{}
	names, ids := map[string]int{}, map[[16]byte]int{}
	for _, tg := range targets {
		hasName, hasID := tg.name != nil && *tg.name != "", tg.id != ([16]byte{})
		if hasName && !hasID {
			names[*tg.name]++
		}
		if hasID && !hasName {
			ids[tg.id]++
		}
	}
	// Later entries of a duplicated name or id are not answered.
	skip := make([]bool, len(targets))
	dupName, dupID := map[string]bool{}, map[[16]byte]bool{}
	results := make([]kmsg.DeleteTopicsResponseTopic, len(targets))
	var fwdIdx []int
	fwd := kmsg.NewPtrDeleteTopicsRequest()
	fwd.TimeoutMillis = req.TimeoutMillis
	for i, tg := range targets {
		hasName, hasID := tg.name != nil && *tg.name != "", tg.id != ([16]byte{})
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = tg.name, tg.id
		var msg string
		switch {
		case hasName && hasID:
			msg = "You may not specify both a topic name and a topic id."
		case !hasName && !hasID:
			msg = "Neither a topic name nor a topic id was given."
		case hasName && names[*tg.name] > 1:
			msg = "Duplicate topic name."
			skip[i] = dupName[*tg.name]
			dupName[*tg.name] = true
		case hasID && ids[tg.id] > 1:
			msg = "Duplicate topic id."
			skip[i] = dupID[tg.id]
			dupID[tg.id] = true
		}
		if msg != "" {
			rt.ErrorCode, rt.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(msg)
		} else if !mayDeleteTopic(rc, img, tg) {
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		} else if n := deletedPartitions(img, tg); !mq.admit(n, req.Version >= 5) {
			rt.ErrorCode, rt.ErrorMessage = kerr.ThrottlingQuotaExceeded.Code, kmsg.StringPtr(kerr.ThrottlingQuotaExceeded.Description)
		} else {
			charged[i] = n
			ft := kmsg.NewDeleteTopicsRequestTopic()
			ft.Topic, ft.TopicID = tg.name, tg.id
			if !hasName {
				ft.Topic = nil
			}
			fwd.Topics = append(fwd.Topics, ft)
			fwdIdx = append(fwdIdx, i)
		}
		results[i] = rt
	}

	if len(fwd.Topics) > 0 {
		forwardDeleteTopics(ctx, srv, fwd, targets, fwdIdx, results)
	}
	for i, n := range charged {
		if results[i].ErrorCode != 0 {
			mq.refund(n)
		}
	}
	for i := range results {
		if skip[i] {
			continue
		}
		if req.Version < 3 && results[i].ErrorCode == kerr.TopicDeletionDisabled.Code {
			results[i].ErrorCode = kerr.InvalidRequest.Code
		}
		if results[i].Topic == nil && req.Version < 6 {
			results[i].Topic = kmsg.StringPtr("")
		}
		resp.Topics = append(resp.Topics, results[i])
	}
	rc.throttleFor(ctx, mq.throttle(), resp)
	return resp, nil
}

// deletedPartitions is what deleting a topic costs the controller mutation
// quota: its partitions (none for a topic this broker does not know).
func deletedPartitions(img *metadata.Image, tg deleteTarget) int {
	if tg.name != nil && *tg.name != "" {
		t, _ := img.Topic(*tg.name)
		return len(t.Partitions)
	}
	t, _ := img.TopicByID(tg.id)
	return len(t.Partitions)
}

// forwardDeleteTopics asks the controller to delete the targets at fwdIdx
// and fills their results.
func forwardDeleteTopics(ctx context.Context, srv *Server, fwd *kmsg.DeleteTopicsRequest, targets []deleteTarget, fwdIdx []int, results []kmsg.DeleteTopicsResponseTopic) {
	fail := func(code int16, msg *string) {
		for _, i := range fwdIdx {
			results[i].ErrorCode, results[i].ErrorMessage = code, msg
		}
	}
	if srv.deps.Admin == nil {
		fail(adminUnreachable.Code, kmsg.StringPtr("no controller reachable from this broker"))
		return
	}
	cctx, cancel := forwardContext(ctx, fwd.TimeoutMillis)
	defer cancel()
	cresp, err := srv.deps.Admin.DeleteTopics(cctx, fwd)
	if err != nil {
		fail(forwardFailure(err))
		return
	}
	// Match answers to entries by what the entry named: the controller
	// fills in the other half (the id of a topic named, the name of a
	// topic identified).
	byName := map[string]kmsg.DeleteTopicsResponseTopic{}
	byID := map[[16]byte]kmsg.DeleteTopicsResponseTopic{}
	for _, rt := range cresp.Topics {
		clearTags(&rt.UnknownTags)
		if rt.Topic != nil {
			byName[*rt.Topic] = rt
		}
		if rt.TopicID != ([16]byte{}) {
			byID[rt.TopicID] = rt
		}
	}
	for _, i := range fwdIdx {
		tg := targets[i]
		var rt kmsg.DeleteTopicsResponseTopic
		var ok bool
		if tg.name != nil && *tg.name != "" {
			rt, ok = byName[*tg.name]
		} else {
			rt, ok = byID[tg.id]
		}
		if !ok {
			results[i].ErrorCode = kerr.UnknownServerError.Code
			results[i].ErrorMessage = kmsg.StringPtr("the controller did not answer for this topic")
			continue
		}
		if rt.Topic == nil {
			rt.Topic = tg.name
		}
		results[i] = rt
	}
}

// mayDeleteTopic is KafkaApis' check: DESCRIBE on the topic (else its
// existence is not revealed), then DELETE on an existing one. A topic id
// no topic has is left to the controller (UNKNOWN_TOPIC_ID).
func mayDeleteTopic(rc *request, img *metadata.Image, tg deleteTarget) bool {
	name := ""
	if tg.name != nil && *tg.name != "" {
		name = *tg.name
	} else if t, ok := img.TopicByID(tg.id); ok {
		name = t.Name
	} else {
		return true
	}
	if !rc.authorize(opDescribe, resTopic, name) {
		return false
	}
	if _, exists := img.Topic(name); exists {
		return rc.authorize(opDelete, resTopic, name)
	}
	return true
}
