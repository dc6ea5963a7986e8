package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// fromValues builds the Config from parsed values and applies the
// cross-field rules, Kafka's KRaft checks among them. Every broken rule is
// reported, not just the first.
func fromValues(v values, src map[string]Source) (*Config, error) {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	c := &Config{}

	if v.has("node.id") {
		c.NodeID = v.int32("node.id")
	} else {
		fail("node.id must be set")
	}
	if v.has("process.roles") {
		for _, r := range v.list("process.roles") {
			c.Roles.Broker = c.Roles.Broker || r == "broker"
			c.Roles.Controller = c.Roles.Controller || r == "controller"
		}
	} else {
		fail("process.roles must be set to broker, controller or both: raftka runs in KRaft mode only")
	}
	c.Rack = v.str("broker.rack")
	c.ElectionTimeout = v.dur("controller.quorum.election.timeout.ms")
	c.QuorumFetchTimeout = v.dur("controller.quorum.fetch.timeout.ms")

	voters, err := parseVoters(v.list("controller.quorum.voters"))
	if err != nil {
		errs = append(errs, err)
	} else if len(voters) == 0 {
		fail("controller.quorum.voters must list the Raft voters as id@host:port,... (Kafka's dynamic quorum, controller.quorum.bootstrap.servers, is not supported)")
	}
	c.Voters = voters
	isVoter := slices.ContainsFunc(voters, func(vt Voter) bool { return vt.ID == c.NodeID })

	// Listener names and their security protocols.
	for _, n := range v.list("controller.listener.names") {
		c.ControllerListenerNames = append(c.ControllerListenerNames, strings.ToUpper(n))
	}
	if len(c.ControllerListenerNames) == 0 {
		fail("controller.listener.names must be set (for example CONTROLLER)")
	}
	protoMap, err := parseProtocolMap(v.list("listener.security.protocol.map"))
	if err != nil {
		errs = append(errs, err)
		protoMap = map[string]string{}
	}
	if _, given := src["listener.security.protocol.map"]; !given {
		// Kafka's rule: with the default map, controller listener names
		// that are not protocol names speak PLAINTEXT.
		for _, n := range c.ControllerListenerNames {
			if _, ok := protoMap[n]; !ok {
				protoMap[n] = "PLAINTEXT"
			}
		}
	}
	c.ListenerSecurityProtocolMap = protoMap
	withProtocol := func(key string, ls []Listener) {
		for i := range ls {
			proto, ok := protoMap[ls[i].Name]
			switch {
			case !ok:
				fail("%s: listener %s has no security protocol in listener.security.protocol.map", key, ls[i].Name)
			case proto != "PLAINTEXT":
				fail("%s: listener %s uses %s; raftka supports PLAINTEXT listeners only for now", key, ls[i].Name, proto)
			}
			ls[i].SecurityProtocol = proto
		}
	}

	listeners, err := parseListeners("listeners", v.list("listeners"))
	if err != nil {
		errs = append(errs, err)
	} else if len(listeners) == 0 {
		fail("listeners must not be empty")
	}
	withProtocol("listeners", listeners)
	ports := map[int]string{}
	for _, l := range listeners {
		if other, dup := ports[l.Port]; dup && l.Port != 0 {
			fail("listeners: %s and %s both use port %d", other, l.Name, l.Port)
		}
		ports[l.Port] = l.Name
	}
	c.Listeners = listeners
	isController := c.IsControllerListener
	hasListener := func(name string) bool { _, ok := c.Listener(name); return ok }

	if c.Roles.Controller {
		if voters != nil && !isVoter {
			fail("node.id=%d is not among controller.quorum.voters: a node with the controller role must be a voter", c.NodeID)
		}
		if len(c.ControllerListenerNames) > 0 && !slices.ContainsFunc(c.ControllerListenerNames, hasListener) {
			fail("listeners has none of controller.listener.names (%s): a node with the controller role needs its controller listener", strings.Join(c.ControllerListenerNames, ","))
		}
		if !c.Roles.Broker {
			for _, l := range listeners {
				if !isController(l.Name) {
					fail("listeners: %s is not in controller.listener.names; a controller-only node has controller listeners only", l.Name)
				}
			}
		}
	}
	if c.Roles.Broker && !c.Roles.Controller {
		if isVoter {
			fail("node.id=%d is among controller.quorum.voters but process.roles=broker: a broker-only node is not a voter", c.NodeID)
		}
		for _, l := range listeners {
			if isController(l.Name) {
				fail("listeners: %s is a controller listener, but process.roles=broker: a broker-only node does not serve the controller listener", l.Name)
			}
		}
	}

	if c.Roles.Broker {
		ib := strings.ToUpper(v.str("inter.broker.listener.name"))
		if ib != "" {
			if _, both := src["security.inter.broker.protocol"]; both {
				fail("inter.broker.listener.name and security.inter.broker.protocol must not both be set")
			}
		} else {
			ib = v.str("security.inter.broker.protocol")
		}
		switch {
		case isController(ib):
			fail("inter.broker.listener.name=%s is a controller listener; brokers replicate over a broker listener", ib)
		case !hasListener(ib):
			fail("inter.broker.listener.name=%s is not among listeners", ib)
		}
		c.InterBrokerListenerName = ib
	}

	if v.has("advertised.listeners") {
		adv, err := parseListeners("advertised.listeners", v.list("advertised.listeners"))
		if err != nil {
			errs = append(errs, err)
		}
		withProtocol("advertised.listeners", adv)
		for _, l := range adv {
			switch {
			case c.Roles.Broker && isController(l.Name):
				fail("advertised.listeners: %s is a controller listener; brokers must not advertise it to clients", l.Name)
			case !hasListener(l.Name):
				fail("advertised.listeners: %s is not among listeners", l.Name)
			case l.Host == "0.0.0.0" || l.Host == "::":
				fail("advertised.listeners: %s advertises the non-routable address %s", l.Name, l.Host)
			}
		}
		c.AdvertisedListeners = adv
	} else {
		for _, l := range listeners {
			if !isController(l.Name) {
				c.AdvertisedListeners = append(c.AdvertisedListeners, l)
			}
		}
	}
	c.MetricsListener = v.str("metrics.listener")

	// Directories.
	switch {
	case len(v.list("log.dirs")) > 0:
		c.LogDirs = v.list("log.dirs")
	case v.str("log.dir") != "":
		c.LogDirs = []string{v.str("log.dir")}
	default:
		fail("log.dirs (or log.dir) must be set")
	}
	for i, d := range c.LogDirs {
		if slices.Contains(c.LogDirs[:i], d) {
			fail("log.dirs: %s is listed twice", d)
		}
	}
	c.MetadataLogDir = v.str("metadata.log.dir")
	c.SnapshotThreshold = uint64(v.int64("raftka.metadata.snapshot.threshold"))
	c.SnapshotInterval = v.dur("raftka.metadata.snapshot.interval.ms")
	c.SnapshotTrailingLogs = uint64(v.int64("raftka.metadata.snapshot.trailing.logs"))
	if c.MetadataLogDir == "" && len(c.LogDirs) > 0 {
		c.MetadataLogDir = c.LogDirs[0]
	}

	// Topic defaults and internal topics.
	c.NumPartitions = v.int32("num.partitions")
	c.DefaultReplicationFactor = int16(v.int32("default.replication.factor"))
	c.MinInsyncReplicas = v.int32("min.insync.replicas")
	c.AutoCreateTopicsEnable = v.bool("auto.create.topics.enable")
	c.DeleteTopicEnable = v.bool("delete.topic.enable")
	c.UncleanLeaderElectionEnable = v.bool("unclean.leader.election.enable")
	c.MessageMaxBytes = v.int32("message.max.bytes")
	c.OffsetsTopicReplicationFactor = int16(v.int32("offsets.topic.replication.factor"))
	c.OffsetsTopicNumPartitions = v.int32("offsets.topic.num.partitions")
	c.OffsetsRetention = msToDuration(int64(v.int32("offsets.retention.minutes")) * 60_000)
	c.TransactionStateLogReplicationFactor = int16(v.int32("transaction.state.log.replication.factor"))
	c.TransactionStateLogMinISR = v.int32("transaction.state.log.min.isr")
	c.TransactionStateLogNumPartitions = v.int32("transaction.state.log.num.partitions")
	c.TransactionMaxTimeout = v.dur("transaction.max.timeout.ms")
	c.TransactionalIDExpiration = v.dur("transactional.id.expiration.ms")
	c.ProducerIDExpiration = v.dur("producer.id.expiration.ms")

	// Retention and roll: Kafka's precedence, ms over minutes over hours.
	switch {
	case v.has("log.retention.ms"):
		c.LogRetentionMs = v.int64("log.retention.ms")
	case v.has("log.retention.minutes"):
		c.LogRetentionMs = int64(v.int32("log.retention.minutes")) * 60_000
	default:
		c.LogRetentionMs = int64(v.int32("log.retention.hours")) * 3_600_000
	}
	if c.LogRetentionMs < 0 {
		c.LogRetentionMs = -1
	}
	c.LogRetentionBytes = v.int64("log.retention.bytes")
	c.LogSegmentBytes = v.int32("log.segment.bytes")
	if v.has("log.roll.ms") {
		c.LogRollMs = v.int64("log.roll.ms")
	} else {
		c.LogRollMs = int64(v.int32("log.roll.hours")) * 3_600_000
	}
	c.LogIndexIntervalBytes = v.int32("log.index.interval.bytes")
	c.LogIndexSizeMaxBytes = v.int32("log.index.size.max.bytes")
	c.LogFlushIntervalMessages = v.int64("log.flush.interval.messages")
	if v.has("log.flush.interval.ms") {
		c.LogFlushIntervalMs = v.int64("log.flush.interval.ms")
	} else {
		c.LogFlushIntervalMs = v.int64("log.flush.scheduler.interval.ms")
	}
	c.LogFlushOffsetCheckpointInterval = v.dur("log.flush.offset.checkpoint.interval.ms")
	c.LogFlushStartOffsetCheckpoint = v.dur("log.flush.start.offset.checkpoint.interval.ms")
	c.LogRetentionCheckInterval = v.dur("log.retention.check.interval.ms")
	c.LogMessageTimestampType = v.str("log.message.timestamp.type")

	// Requests and replication.
	c.SocketRequestMaxBytes = v.int32("socket.request.max.bytes")
	c.FetchMaxBytes = v.int32("fetch.max.bytes")
	c.ConnectionsMaxIdle = v.dur("connections.max.idle.ms")
	c.ReplicaLagTimeMax = v.dur("replica.lag.time.max.ms")
	c.ReplicaFetchMaxBytes = v.int32("replica.fetch.max.bytes")
	c.ReplicaFetchResponseMaxByte = v.int32("replica.fetch.response.max.bytes")
	c.ReplicaFetchMinBytes = v.int32("replica.fetch.min.bytes")
	c.ReplicaFetchWaitMax = v.dur("replica.fetch.wait.max.ms")
	c.ReplicaFetchBackoff = v.dur("replica.fetch.backoff.ms")
	c.ReplicaSocketTimeout = v.dur("replica.socket.timeout.ms")
	c.RecoveryThreadsPerDataDir = v.int32("num.recovery.threads.per.data.dir")
	c.FetchSessionCacheSlots = v.int32("max.incremental.fetch.session.cache.slots")
	c.FetchSessionEvictionMin = v.dur("min.incremental.fetch.session.eviction.ms")
	c.NumReplicaFetchers = v.int32("num.replica.fetchers")
	c.HighWatermarkCheckpoint = v.dur("replica.high.watermark.checkpoint.interval.ms")
	c.FollowerDropBehind = v.int64("raftka.follower.drop.behind.bytes")
	if c.ReplicaFetchWaitMax > c.ReplicaLagTimeMax {
		fail("replica.fetch.wait.max.ms (%v) must not exceed replica.lag.time.max.ms (%v), or healthy followers would drop out of the ISR", c.ReplicaFetchWaitMax, c.ReplicaLagTimeMax)
	}

	// Liveness, leadership, groups.
	c.BrokerSessionTimeout = v.dur("broker.session.timeout.ms")
	c.BrokerHeartbeatInterval = v.dur("broker.heartbeat.interval.ms")
	if c.BrokerHeartbeatInterval >= c.BrokerSessionTimeout {
		fail("broker.heartbeat.interval.ms (%v) must be less than broker.session.timeout.ms (%v), or live brokers get fenced", c.BrokerHeartbeatInterval, c.BrokerSessionTimeout)
	}
	c.ControlledShutdownEnable = v.bool("controlled.shutdown.enable")
	c.AutoLeaderRebalanceEnable = v.bool("auto.leader.rebalance.enable")
	if secs := v.int64("leader.imbalance.check.interval.seconds"); secs > math.MaxInt64/1000 {
		c.LeaderImbalanceCheckInterval = math.MaxInt64
	} else {
		c.LeaderImbalanceCheckInterval = msToDuration(secs * 1000)
	}
	c.LeaderImbalancePerBrokerPercentage = v.int32("leader.imbalance.per.broker.percentage")
	c.GroupInitialRebalanceDelay = v.dur("group.initial.rebalance.delay.ms")
	c.GroupMinSessionTimeout = v.dur("group.min.session.timeout.ms")
	c.GroupMaxSessionTimeout = v.dur("group.max.session.timeout.ms")
	if c.GroupMinSessionTimeout > c.GroupMaxSessionTimeout {
		fail("group.min.session.timeout.ms (%v) must not exceed group.max.session.timeout.ms (%v)", c.GroupMinSessionTimeout, c.GroupMaxSessionTimeout)
	}
	c.GroupMaxSize = v.int32("group.max.size")

	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// softChecks finds settings that are legal but probably not meant.
func (c *Config) softChecks() []string {
	var w []string
	if l, ok := c.ControllerListener(); ok && c.Roles.Controller {
		for _, v := range c.Voters {
			if v.ID == c.NodeID && v.Port != l.Port {
				w = append(w, fmt.Sprintf("controller.quorum.voters: this node's entry %s has a port other than its controller listener %s; other voters will not reach it there unless something forwards the port", v, l))
			}
		}
	}
	return w
}
