package broker

import (
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A leader refuses a produced batch for its content when its records are
// corrupt, undecodable or break a rule (storage.Batch.ValidateProduce).
// Such a producer is buggy or hostile, and its clients see only an error
// code, so the broker counts each refusal by reason and client id and logs
// the client, at most once per refusalLogEvery per client, so an operator
// can find it without a flood of lines.

const (
	refusalLogEvery   = 10 * time.Second
	maxRefusalClients = 100 // distinct client ids labelled; the rest are "other"
	maxClientIDLabel  = 64  // bytes of a client id kept in a label
)

// refusals is the Server's record of whom it refused.
type refusals struct {
	mu      sync.Mutex
	clients map[string]*refusalClient
}

type refusalClient struct {
	lastLog    time.Time
	suppressed int
}

// refusalReason is the metric reason for a produce error code that refuses
// a batch for its content, "" for any other error.
func refusalReason(code int16) string {
	switch code {
	case kerr.CorruptMessage.Code:
		return "corrupt_message"
	case kerr.InvalidRecord.Code:
		return "invalid_record"
	case kerr.MessageTooLarge.Code:
		return "message_too_large"
	case kerr.InvalidTimestamp.Code:
		return "invalid_timestamp"
	}
	return ""
}

// batchRefused counts and maybe logs one refused batch. Refusals are rare,
// so the lock costs nothing on the produce path of a healthy client.
func (s *Server) batchRefused(rc *request, topic string, partition int32, code int16, err error) {
	reason := refusalReason(code)
	if reason == "" {
		return
	}
	now := time.Now()
	s.refusals.mu.Lock()
	label, c := s.refusals.client(rc.clientID)
	logIt := now.Sub(c.lastLog) >= refusalLogEvery
	suppressed := c.suppressed
	if logIt {
		c.lastLog, c.suppressed = now, 0
	} else {
		c.suppressed++
	}
	s.refusals.mu.Unlock()
	s.metrics.BatchRefused(reason, label)
	if logIt {
		s.log.Warn().Str("client_id", rc.clientID).Stringer("remote", rc.conn.remote).
			Str("topic", topic).Int32("partition", partition).Str("reason", reason).
			Int("suppressed_since_last", suppressed).Err(err).
			Msg("refused a produced batch; the producer sent records no consumer could read")
	}
}

// client returns the metric label for id and its log state, creating both;
// called with mu held. Labels are valid UTF-8 and bounded, and past
// maxRefusalClients distinct ids every new one is "other", so a client
// inventing ids cannot grow the metrics without bound.
func (r *refusals) client(id string) (string, *refusalClient) {
	label := strings.ToValidUTF8(id, "?")
	if len(label) > maxClientIDLabel {
		label = strings.ToValidUTF8(label[:maxClientIDLabel], "")
	}
	if r.clients == nil {
		r.clients = make(map[string]*refusalClient)
	}
	c, ok := r.clients[label]
	if !ok {
		if len(r.clients) >= maxRefusalClients {
			label = "other"
			if c, ok = r.clients[label]; ok {
				return label, c
			}
		}
		c = new(refusalClient)
		r.clients[label] = c
	}
	return label, c
}
