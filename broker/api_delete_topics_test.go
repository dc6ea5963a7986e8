package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func deleteByName(version int16, names ...string) *kmsg.DeleteTopicsRequest {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version, req.TimeoutMillis = version, 3000
	if version >= 6 {
		for _, n := range names {
			t := kmsg.NewDeleteTopicsRequestTopic()
			t.Topic = strp(n)
			req.Topics = append(req.Topics, t)
		}
	} else {
		req.TopicNames = names
	}
	return req
}

func TestDeleteTopicsByNameAllVersions(t *testing.T) {
	for v := int16(1); v <= 6; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			fa := &adminCtrl{deleteTopics: func(req *kmsg.DeleteTopicsRequest) *kmsg.DeleteTopicsResponse {
				resp := kmsg.NewPtrDeleteTopicsResponse()
				resp.Version = 6
				// Answered out of order, and with the id filled in, as
				// the controller may.
				for i := len(req.Topics) - 1; i >= 0; i-- {
					rt := kmsg.NewDeleteTopicsResponseTopic()
					rt.Topic, rt.TopicID = req.Topics[i].Topic, ordersID
					if *rt.Topic == "gone" {
						rt.TopicID, rt.ErrorCode = [16]byte{}, kerr.UnknownTopicOrPartition.Code
					}
					tagged(&rt.UnknownTags)
					resp.Topics = append(resp.Topics, rt)
				}
				return resp
			}}
			s := adminServer(t, clusterImage(t, 9001), fa, nil)
			resp := call[*kmsg.DeleteTopicsResponse](t, s, deleteByName(v, "orders", "twice", "gone", "twice"))
			// Kafka answers a duplicated name once (ControllerApis.deleteTopics).
			if len(resp.Topics) != 3 {
				t.Fatalf("%d answers, want one per distinct name", len(resp.Topics))
			}
			want := []struct {
				name string
				code int16
			}{{"orders", 0}, {"twice", kerr.InvalidRequest.Code}, {"gone", kerr.UnknownTopicOrPartition.Code}}
			for i, w := range want {
				rt := resp.Topics[i]
				if deref(rt.Topic) != w.name || rt.ErrorCode != w.code || rt.UnknownTags.Len() != 0 {
					t.Errorf("answer %d: %s code %d tags %d, want %s code %d", i, deref(rt.Topic), rt.ErrorCode, rt.UnknownTags.Len(), w.name, w.code)
				}
			}
			if v >= 6 && resp.Topics[0].TopicID != ordersID {
				t.Errorf("v6 answer lacks the deleted topic's id")
			}
			fr := fa.requests()[0].(*kmsg.DeleteTopicsRequest)
			if len(fr.Topics) != 2 || *fr.Topics[0].Topic != "orders" || *fr.Topics[1].Topic != "gone" || fr.TimeoutMillis != 3000 {
				t.Fatalf("forwarded %+v", fr.Topics)
			}
		})
	}
}

func TestDeleteTopicsByIDAndBadEntries(t *testing.T) {
	fa := &adminCtrl{}
	s := adminServer(t, clusterImage(t, 9001), fa, nil)
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 6
	add := func(name *string, id [16]byte) {
		tp := kmsg.NewDeleteTopicsRequestTopic()
		tp.Topic, tp.TopicID = name, id
		req.Topics = append(req.Topics, tp)
	}
	add(nil, ordersID)               // by id
	add(strp("orders"), [16]byte{8}) // both
	add(nil, [16]byte{})             // neither
	add(nil, [16]byte{5})            // id twice
	add(strp(""), [16]byte{5})       // an empty name counts as none: the id's second entry
	resp := call[*kmsg.DeleteTopicsResponse](t, s, req)
	// The duplicated id is answered once.
	codes := []int16{0, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}
	if len(resp.Topics) != len(codes) {
		t.Fatalf("%d answers, want %d", len(resp.Topics), len(codes))
	}
	for i, rt := range resp.Topics {
		if rt.ErrorCode != codes[i] {
			t.Errorf("entry %d: code %d, want %d (%s)", i, rt.ErrorCode, codes[i], deref(rt.ErrorMessage))
		}
	}
	fr := fa.requests()[0].(*kmsg.DeleteTopicsRequest)
	if len(fr.Topics) != 1 || fr.Topics[0].Topic != nil || fr.Topics[0].TopicID != ordersID {
		t.Fatalf("forwarded %+v", fr.Topics)
	}
}

func TestDeleteTopicsDisabled(t *testing.T) {
	fa := &adminCtrl{deleteTopics: func(req *kmsg.DeleteTopicsRequest) *kmsg.DeleteTopicsResponse {
		resp := kmsg.NewPtrDeleteTopicsResponse()
		for _, tp := range req.Topics {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = tp.Topic, kerr.TopicDeletionDisabled.Code
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}}
	s := adminServer(t, clusterImage(t, 9001), fa, nil)
	for v, want := range map[int16]int16{1: kerr.InvalidRequest.Code, 2: kerr.InvalidRequest.Code, 3: kerr.TopicDeletionDisabled.Code, 6: kerr.TopicDeletionDisabled.Code} {
		resp := call[*kmsg.DeleteTopicsResponse](t, s, deleteByName(v, "orders"))
		if resp.Topics[0].ErrorCode != want {
			t.Errorf("v%d: code %d, want %d", v, resp.Topics[0].ErrorCode, want)
		}
	}
}

func TestCreatePartitions(t *testing.T) {
	for v := int16(0); v <= 3; v++ {
		fa := &adminCtrl{}
		s := adminServer(t, clusterImage(t, 9001), fa, nil)
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Version, req.ValidateOnly, req.TimeoutMillis = v, true, 1000
		for _, n := range []string{"orders", "x", "x"} {
			tp := kmsg.NewCreatePartitionsRequestTopic()
			tp.Topic, tp.Count = n, 5
			req.Topics = append(req.Topics, tp)
		}
		resp := call[*kmsg.CreatePartitionsResponse](t, s, req)
		if len(resp.Topics) != 2 || resp.Topics[0].Topic != "orders" || resp.Topics[0].ErrorCode != 0 ||
			resp.Topics[1].Topic != "x" || resp.Topics[1].ErrorCode != kerr.InvalidRequest.Code || resp.Topics[0].UnknownTags.Len() != 0 {
			t.Fatalf("v%d: answer %+v", v, resp.Topics)
		}
		fr := fa.requests()[0].(*kmsg.CreatePartitionsRequest)
		if len(fr.Topics) != 1 || fr.Topics[0].Count != 5 || !fr.ValidateOnly {
			t.Fatalf("v%d: forwarded %+v", v, fr)
		}
	}
	s := adminServer(t, clusterImage(t, 9001), &adminCtrl{err: kerr.RequestTimedOut}, nil)
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Version = 3
	tp := kmsg.NewCreatePartitionsRequestTopic()
	tp.Topic, tp.Count = "orders", 4
	req.Topics = append(req.Topics, tp)
	if resp := call[*kmsg.CreatePartitionsResponse](t, s, req); resp.Topics[0].ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("failed call answered %d", resp.Topics[0].ErrorCode)
	}
}
