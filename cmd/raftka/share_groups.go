package main

import (
	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/broker/group"
	"github.com/raftka/raftka/broker/group/sharegroup"
	"github.com/raftka/raftka/raftfsm"
	"github.com/rs/zerolog"
)

// newShareGroups starts the share group coordinator: the classic groups'
// slots, the group.share.* settings, and the group state persisted through
// the controller (records 55-59).
func newShareGroups(cfg *config.Config, node *raftfsm.Node, groups *group.Coordinator, log zerolog.Logger) *sharegroup.Coordinator {
	return sharegroup.NewCoordinator(sharegroup.CoordinatorConfig{
		Owner:       groups.Ownership,
		GroupConfig: shareGroupConfig(cfg),
		Metadata:    node,
		Persister:   sharegroup.NewControllerPersister(node.Client()),
		Log:         log,
	})
}

// shareGroupConfig is a group's effective share settings. Every group has
// the broker's values until GROUP resource configs (per-group overrides of
// group.share.session.timeout.ms and group.share.heartbeat.interval.ms)
// exist; they plug in here.
func shareGroupConfig(cfg *config.Config) func(string) sharegroup.Config {
	return func(string) sharegroup.Config {
		return sharegroup.Config{
			SessionTimeout:    cfg.ShareGroupSessionTimeout,
			HeartbeatInterval: cfg.ShareGroupHeartbeatInterval,
			MaxSize:           int(cfg.ShareGroupMaxSize),
		}
	}
}
