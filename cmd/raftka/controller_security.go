package main

import (
	"sync/atomic"
	"time"

	"github.com/raftka/raftka/broker"
	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// controllerSecurity sets the controller listener's TLS and SASL on rc
// (raftfsm.Config's Handshake and Dial) and, with authorizer.class.name
// set, its authorizer: only principals with CLUSTER_ACTION on the cluster
// (brokers and controllers, in super.users or granted it) may open Raft
// streams or send controller RPCs.
//
// SCRAM logins are checked against the local image. Until that image holds
// the cluster's first entry (a new cluster, before its quorum has elected
// and committed anything; or a node formatted to join one) the voters
// must still authenticate each other to elect: they use the credentials
// this node's storage format --add-scram wrote, as Kafka's controllers use
// their bootstrap checkpoint. So every node of a SCRAM controller listener
// is formatted with the same --add-scram users, as kafka-storage.sh asks.
func controllerSecurity(rc *raftfsm.Config, cfg *config.Config, boot []metadata.Record, node *atomic.Pointer[raftfsm.Node], m broker.Metrics, log zerolog.Logger) error {
	bootCreds := bootstrapScram(boot)
	lookup := func(user string, mech metadata.ScramMechanism) (metadata.ScramCredential, bool) {
		if n := node.Load(); n != nil {
			if img, _ := n.Publisher().Current(); img.ClusterID() != "" {
				return img.ScramCredential(user, mech)
			}
		}
		c, ok := bootCreds[scramUser{user, mech}]
		return c, ok
	}
	hs, err := broker.ControllerHandshake(cfg, lookup, m, log.With().Str("component", "controller-listener").Logger(),
		broker.WithControllerAPIVersions(func(v int16) *kmsg.ApiVersionsResponse {
			return raftfsm.APIVersionsResponseWith(v, rc.DescribeConfigs != nil)
		}))
	if err != nil {
		return err
	}
	if hs != nil {
		rc.Handshake = hs
	}
	dial, err := broker.ControllerDialer(cfg, 10*time.Second, log)
	if err != nil {
		return err
	}
	if dial != nil {
		rc.Dial = dial
	}
	if cfg.AuthorizerEnabled {
		rc.Authorizer = &metadata.Authorizer{
			SuperUsers:           metadata.ParseSuperUsers(cfg.SuperUsers),
			AllowEveryoneIfNoACL: cfg.AllowEveryoneIfNoACLFound,
		}
		if w := anonymousControllerWarning(cfg, rc.Authorizer); w != "" {
			log.Warn().Msg(w)
		}
	}
	return nil
}

// anonymousControllerWarning says when the controller listener's
// connections are anonymous (PLAINTEXT, or SSL without client
// certificates) but User:ANONYMOUS cannot hold CLUSTER_ACTION before any
// ACL exists: the quorum could then not form, nor brokers register.
func anonymousControllerWarning(cfg *config.Config, a *metadata.Authorizer) string {
	l, ok := cfg.ControllerListener()
	if !ok {
		return ""
	}
	sec := cfg.Security[l.Name]
	anonymous := sec == nil || !sec.SASL() && (!sec.TLS() || sec.ClientAuth != "required")
	if !anonymous || a.SuperUsers[raftfsm.AnonymousPrincipal] || a.AllowEveryoneIfNoACL {
		return ""
	}
	return "the controller listener " + l.Name + " does not authenticate, so Raft and the brokers' controller RPCs arrive as User:ANONYMOUS, which the authorizer refuses CLUSTER_ACTION: add User:ANONYMOUS to super.users (as Kafka needs) or secure the controller listener with SASL or mTLS"
}

type scramUser struct {
	name string
	mech metadata.ScramMechanism
}

// bootstrapScram is the SCRAM credentials among the bootstrap records.
func bootstrapScram(boot []metadata.Record) map[scramUser]metadata.ScramCredential {
	out := map[scramUser]metadata.ScramCredential{}
	for _, r := range boot {
		if u, ok := r.(*metadata.UserScramCredential); ok {
			out[scramUser{u.Name, u.Mechanism}] = metadata.ScramCredential{
				Salt: u.Salt, StoredKey: u.StoredKey, ServerKey: u.ServerKey, Iterations: u.Iterations}
		}
	}
	return out
}
