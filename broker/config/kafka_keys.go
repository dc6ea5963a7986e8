package config

import "strings"

// kafkaIgnored lists Kafka broker keys raftka accepts and does not act on:
// thread pools and buffers the Go runtime sizes itself, ZooKeeper-era and
// migration keys, features raftka does not have yet. A Kafka user's file
// keeps working; each such key costs one warning. Keys raftka acts on live in
// defs.go, never here (a test holds the two apart).
var kafkaIgnored = toSet(
	// Threads, queues and socket buffers.
	"num.network.threads", "num.io.threads",
	"background.threads", "queued.max.requests", "queued.max.request.bytes",
	"socket.send.buffer.bytes", "socket.receive.buffer.bytes", "socket.listen.backlog.size",
	"socket.connection.setup.timeout.ms", "socket.connection.setup.timeout.max.ms",
	"replica.socket.receive.buffer.bytes",
	"max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides",
	"fetch.purgatory.purge.interval.requests", "producer.purgatory.purge.interval.requests",
	"delete.records.purgatory.purge.interval.requests", "num.quota.samples",
	"num.replica.alter.log.dirs.threads",
	"request.timeout.ms",

	// Log details raftka fixes or does not offer.
	"log.roll.jitter.ms", "log.roll.jitter.hours", "log.preallocate",
	"log.segment.delete.delay.ms", "log.message.format.version",
	"log.message.timestamp.difference.max.ms", "log.message.timestamp.before.max.ms",
	"log.message.timestamp.after.max.ms", "log.message.downconversion.enable",
	"log.local.retention.ms", "log.local.retention.bytes", "log.initial.task.delay.ms",
	"log.cleaner.io.buffer.size", "log.cleaner.io.buffer.load.factor",
	"log.dir.failure.timeout.ms", "auto.include.jmx.reporter",

	// Internal topics Kafka keeps as logs; raftka keeps their state in the Raft metadata.
	"offsets.topic.segment.bytes", "offsets.topic.compression.codec", "offsets.load.buffer.size",
	"offsets.commit.timeout.ms", "offsets.commit.required.acks",
	"transaction.state.log.segment.bytes", "transaction.state.log.load.buffer.size",
	"producer.id.expiration.check.interval.ms",
	"transaction.two.phase.commit.enable",

	// KRaft internals hashicorp/raft replaces.
	"controller.quorum.election.backoff.max.ms",
	"controller.quorum.request.timeout.ms", "controller.quorum.retry.backoff.ms",
	"controller.quorum.append.linger.ms", "controller.quorum.fetch.snapshot.max.bytes",
	"controller.quorum.auto.join.enable", "controller.socket.timeout.ms",
	"controller.quota.window.num", "controller.quota.window.size.seconds",
	"controller.performance.sample.period.ms", "controller.performance.always.log.threshold.ms",
	"metadata.log.segment.bytes", "metadata.log.segment.ms", "metadata.log.segment.min.bytes",
	"metadata.log.max.record.bytes.between.snapshots", "metadata.log.max.snapshot.interval.ms",
	"metadata.max.retention.bytes", "metadata.max.retention.ms", "metadata.max.idle.interval.ms",
	"metadata.max.idle.interval.ms", "initial.broker.registration.timeout.ms",
	"broker.heartbeat.interval.ms.max", "eligible.leader.replicas.enable",
	"controlled.shutdown.max.retries", "controlled.shutdown.retry.backoff.ms",
	"leader.imbalance.per.broker.percentage.max", "unstable.api.versions.enable",
	"unstable.feature.versions.enable", "unstable.metadata.versions.enable",
	"early.start.listeners", "server.max.startup.time.ms",

	// ZooKeeper mode and the migration out of it.
	"zookeeper.connect", "zookeeper.session.timeout.ms", "zookeeper.connection.timeout.ms",
	"zookeeper.max.in.flight.requests", "zookeeper.set.acl", "zookeeper.metadata.migration.enable",
	"zookeeper.ssl.client.enable", "zookeeper.clientCnxnSocket", "broker.id", "broker.id.generation.enable",
	"reserved.broker.max.id", "inter.broker.protocol.version", "control.plane.listener.name",
	"host.name", "port", "advertised.host.name", "advertised.port",

	// Replication details.
	"replica.selector.class", "replica.lag.time.max.ms.max", "alter.config.policy.class.name",
	"create.topic.policy.class.name", "alter.log.dirs.replication.quota.window.num",
	"alter.log.dirs.replication.quota.window.size.seconds", "replication.quota.window.num",
	"replication.quota.window.size.seconds",
	"replica.alter.log.dirs.io.max.bytes.per.second",

	// Groups beyond the classic protocol.
	"group.coordinator.new.enable", "group.coordinator.threads",
	"group.coordinator.append.linger.ms", "group.share.enable", "group.version",
	"offsets.topic.num.partitions.max", "offset.metadata.max.bytes", "max.request.partition.size.limit",

	// Transactions beyond the partition side.
	"add.partitions.to.txn.retry.backoff.ms", "add.partitions.to.txn.retry.backoff.max.ms",

	// Metrics, telemetry and quotas.
	"metric.reporters", "metrics.num.samples", "metrics.sample.window.ms", "metrics.recording.level",
	"kafka.metrics.reporters", "kafka.metrics.polling.interval.secs", "client.quota.callback.class",
	"client.telemetry.max.bytes", "telemetry.max.bytes", "auto.include.jmx.reporter",

	// Security keys raftka does not act on yet (those it applies are in
	// security.go): outgoing TLS, principal mapping.
	"ssl.protocol",
	"sasl.jaas.config", "sasl.kerberos.service.name", "sasl.server.callback.handler.class",
	"principal.builder.class",
	"delegation.token.master.key", "delegation.token.secret.key", "delegation.token.max.lifetime.ms",
	"delegation.token.expiry.time.ms", "password.encoder.secret", "password.encoder.old.secret",
	"config.providers", "security.providers", "allowed.listener.names",
	"delegation.token.expiry.check.interval.ms",

	// Remote (tiered) storage.
	"remote.log.storage.system.enable", "remote.log.manager.task.interval.ms",
	"remote.log.storage.manager.class.name", "remote.log.metadata.manager.class.name",
	"remote.fetch.max.wait.ms", "remote.list.offsets.request.timeout.ms",
)

// kafkaIgnoredPrefixes covers Kafka's families of keys with variable parts
// (per-listener settings, quota knobs, tiered storage).
var kafkaIgnoredPrefixes = []string{
	"listener.name.", "ssl.", "sasl.", "remote.log.", "remote.storage.",
	"zookeeper.", "quota.", "client.quota.", "group.consumer.", "group.share.", "group.streams.", "share.",
	"confluent.", "kafka.metrics.", "metric.", "metrics.", "sasl.oauthbearer.", "ssl.engine.",
}

func isKafkaIgnored(key string) bool {
	if kafkaIgnored[key] {
		return true
	}
	for _, p := range kafkaIgnoredPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

func toSet(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// KnownKey reports whether a server.properties key is one raftka acts on
// (its table or the security keys) or a Kafka key it accepts with a
// warning; false means Load calls it unknown.
func KnownKey(key string) bool {
	_, ok := defsByName[key]
	return ok || isSecurityKey(key) || isKafkaIgnored(key)
}
