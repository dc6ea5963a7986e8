package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/raftka/raftka/broker"
	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/broker/group"
	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/broker/txn"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
	"github.com/raftka/raftka/storage"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

func init() {
	overrides := &overrideList{}
	register(&cli.Command{
		Name:  "server",
		Usage: "run a raftka node from a Kafka-style server.properties",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Required: true, Usage: "the node's server.properties"},
			&cli.GenericFlag{Name: "override", Value: overrides, Usage: "set a config key, as key=value (repeatable; commas stay in the value)"},
			&cli.DurationFlag{Name: "shutdown-timeout", Value: 30 * time.Second, Usage: "how long a controlled shutdown may take before the node stops anyway"},
		},
		Action: func(c *cli.Context) error {
			cfg, warnings, err := config.Load(c.String("config"), overrides.take())
			if err != nil {
				return err
			}
			for _, w := range warnings {
				logger.Warn().Msg(w)
			}
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runServer(ctx, cfg, logger.With().Int32("node", cfg.NodeID).Logger(), c.Duration("shutdown-timeout"))
		},
	})
}

// runServer runs one node until ctx ends (SIGTERM or SIGINT), then shuts it
// down in the order that loses nothing: controlled shutdown through the
// controller first (leaderships move away while this node still serves),
// then the client listeners, then the logs (clean-shutdown marker), and Raft
// last, handing Raft leadership over if this node holds it.
func runServer(ctx context.Context, cfg *config.Config, log zerolog.Logger, shutdownTimeout time.Duration) error {
	metas, failedDirs, err := storage.CheckDirsAt(cfg.AllDirs(), cfg.MetadataLogDir, cfg.NodeID)
	if err != nil {
		return err
	}
	clusterID := metas[slices.Index(cfg.AllDirs(), cfg.MetadataLogDir)].ClusterID
	log.Info().Str("cluster_id", clusterID).Strs("log_dirs", cfg.LogDirs).Msg("starting raftka node")
	for _, w := range notApplied(cfg) {
		log.Warn().Msg(w)
	}

	metrics := newPromMetrics()
	describer := newConfigDescriber()
	node, err := startRaft(cfg, clusterID, log, metrics, metrics, describer)
	if err != nil {
		return err
	}
	defer func() {
		if err := node.Shutdown(); err != nil {
			log.Warn().Err(err).Msg("raft shutdown")
		}
	}()

	// A log dir that fails (dir_failure.go in storage) takes its
	// partitions offline in the replica layer, which starts after the
	// logs, hence the late binding; the heartbeats then name them.
	var replicasRef atomic.Pointer[replica.Manager]
	logs, reports, err := storage.OpenManager(storage.ManagerOptions{
		FailedAtStart: failedDirs,
		OnDirFailure: func(dir string, parts []storage.TopicPartition, err error) {
			log.Error().Err(err).Str("dir", dir).Int("partitions", len(parts)).Msg("log dir failed: taking it offline")
			if r := replicasRef.Load(); r != nil {
				r.HandleDirFailure(dir, parts)
			}
		},
		OnFlush:                metrics.logFlushed,
		OnFlushRound:           metrics.logFlushRound,
		Dirs:                   cfg.LogDirs,
		ConfigFor:              func(topic string) storage.Config { return topicStorageConfig(node, cfg, topic) },
		RetentionCheckInterval: cfg.LogRetentionCheckInterval,
		Threads:                int(cfg.RecoveryThreadsPerDataDir) * len(cfg.LogDirs),
		ReplicationInterval:    cfg.HighWatermarkCheckpoint,
		FollowerDropBehind:     cfg.FollowerDropBehind,
		ProducerIDExpiration:   cfg.ProducerIDExpiration,
		Cleaner: storage.CleanerOptions{
			Enable:               cfg.LogCleanerEnable,
			Threads:              int(cfg.LogCleanerThreads),
			DedupeBufferSize:     cfg.LogCleanerDedupeBufferSize,
			IOMaxBytesPerSecond:  cfg.LogCleanerIOMaxBytesPerSecond,
			BusyIOBytesPerSecond: busyCleanerIO(cfg.LogCleanerBusyIOBytesPerSecond),
			Backoff:              cfg.LogCleanerBackoff,
			OnClean:              logClean(log),
		},
	})
	if err != nil {
		return err
	}
	logRecovery(log, reports)
	defer func() {
		if err := logs.Close(); err != nil {
			log.Error().Err(err).Msg("closing logs")
		}
	}()

	// A follower whose fetch connection to its leader breaks reports the
	// leader in this broker's next heartbeat, sent at once, so the
	// controller can probe it (raftfsm liveness.go), and tells its own
	// Raft node, which campaigns early if that broker's node led Raft and
	// is gone too (liveness_raft.go). The lifecycle starts after the
	// replicas, hence the late binding.
	var lifeRef atomic.Pointer[broker.Lifecycle]
	sourceLost := func(id int32) {
		if l := lifeRef.Load(); l != nil {
			l.Suspect(id)
		}
		node.SuspectPeer(id)
	}
	offlineNoted := func(string, []storage.TopicPartition) {
		if l := lifeRef.Load(); l != nil {
			l.Nudge()
		}
	}
	replicas, stopReplicas, err := startReplicas(node, logs, cfg, sourceLost, offlineNoted, log)
	if err != nil {
		return err
	}
	replicasRef.Store(replicas)
	for _, od := range logs.OfflineDirs() {
		log.Error().Err(od.Err).Str("dir", od.Dir).Msg("log dir unusable at start: it is offline")
	}
	if parts := logs.OfflinePartitions(); len(parts) > 0 {
		// Failures between the logs' start and the replicas' wiring.
		byDir := map[string][]storage.TopicPartition{}
		for tp, d := range parts {
			byDir[d] = append(byDir[d], tp)
		}
		for d, tps := range byDir {
			replicas.HandleDirFailure(d, tps)
		}
	}
	dirIDs := map[string]string{}
	for i, d := range cfg.AllDirs() {
		dirIDs[d] = metas[i].DirectoryID
	}
	// Deferred after logs.Close, so it runs before it: fetchers and waiting
	// requests stop while the logs are still open.
	defer stopReplicas()
	// Stopped before the replicas and the logs (defers run in reverse).
	defer watchDynamicConfigs(node, logs, replicas, cfg, log.With().Str("component", "configs").Logger())()

	// Closed after the client listeners (defers run in reverse), so no
	// request is left waiting on a group loop.
	groups := group.NewCoordinator(group.CoordinatorConfig{
		NodeID: cfg.NodeID,
		Group: group.Config{
			MinSessionTimeout:     cfg.GroupMinSessionTimeout,
			MaxSessionTimeout:     cfg.GroupMaxSessionTimeout,
			InitialRebalanceDelay: cfg.GroupInitialRebalanceDelay,
			MaxSize:               int(cfg.GroupMaxSize),
		},
		Consumer: group.ConsumerConfig{
			SessionTimeout:    cfg.GroupConsumerSessionTimeout,
			HeartbeatInterval: cfg.GroupConsumerHeartbeatInterval,
			MaxSize:           int(cfg.GroupConsumerMaxSize),
			Assignors:         cfg.GroupConsumerAssignors,
			MigrationPolicy:   cfg.GroupConsumerMigrationPolicy,
			Overrides:         groupConfigOverrides(cfg),
		},
		OffsetsTopicPartitions:        cfg.OffsetsTopicNumPartitions,
		OffsetsTopicReplicationFactor: cfg.OffsetsTopicReplicationFactor,
		Logger:                        log.With().Str("component", "groups").Logger(),
		Observer:                      metrics,
	}, node.Publisher(), node.Client())
	defer groups.Close()
	shareGroups := newShareGroups(cfg, node, groups, log.With().Str("component", "share-groups").Logger())
	defer shareGroups.Close()

	// The transaction coordinator's producer ids come from the broker's
	// block (broker.Server.NextProducerID), and its markers go to the local
	// replicas or over the inter-broker listener.
	peers := &broker.InterBrokerClient{
		Metadata: node, Listener: cfg.InterBrokerListenerName,
		ClientID: fmt.Sprintf("raftka-txn-%d", cfg.NodeID),
	}
	if peers.Dial, err = broker.InterBrokerDialer(cfg, 10*time.Second, log); err != nil {
		return err
	}
	defer peers.Close()
	var srv *broker.Server
	txns := txn.NewCoordinator(txn.Config{
		NodeID:                      cfg.NodeID,
		StateTopicPartitions:        cfg.TransactionStateLogNumPartitions,
		StateTopicReplicationFactor: cfg.TransactionStateLogReplicationFactor,
		StateTopicMinISR:            int16(cfg.TransactionStateLogMinISR),
		OffsetsTopicPartitions:      cfg.OffsetsTopicNumPartitions,
		Limits: txn.Limits{
			MaxTimeoutMs:   int32(cfg.TransactionMaxTimeout.Milliseconds()),
			IDExpirationMs: cfg.TransactionalIDExpiration.Milliseconds(),
		},
		AbortTimedOutInterval: cfg.TransactionAbortTimedOutInterval,
		RemoveExpiredInterval: cfg.TransactionRemoveExpiredInterval,
		ProducerIDs:           func(ctx context.Context) (int64, error) { return srv.NextProducerID(ctx) },
		Logger:                log.With().Str("component", "transactions").Logger(),
	}, node.Publisher(), txnController{node.Client()}, &broker.TxnMarkers{NodeID: cfg.NodeID, Replicas: replicas, Peers: peers})
	defer txns.Close()

	var listeners []broker.Listener
	for _, l := range cfg.Listeners {
		if cfg.IsControllerListener(l.Name) {
			continue
		}
		listeners = append(listeners, broker.Listener{Name: l.Name, Addr: l.Addr(), Security: cfg.Security[l.Name]})
	}
	srv, err = broker.New(broker.Options{
		Logger:             log.With().Str("component", "broker").Logger(),
		Listeners:          listeners,
		MaxRequestBytes:    cfg.SocketRequestMaxBytes,
		ConnectionsMaxIdle: idleLimit(cfg.ConnectionsMaxIdle),
		NodeID:             cfg.NodeID,
		AutoCreateTopics:   cfg.AutoCreateTopicsEnable,
		Metrics:            metrics,
		Config:             cfg,
		Deps: broker.Deps{
			Metadata:    node,
			Controller:  node.Client(),
			Admin:       node.Client(),
			Quorum:      node,
			Replicas:    replicas,
			Groups:      groups,
			ShareGroups: shareGroups,
			Scram:       node.Client(),
			ACLs:        node.Client(),
			Quotas:      node.Client(),
			Txns:        txns,
			Peers:       peers,
			ShareState:  node.Client(),
		},
		Partitions: broker.PartitionOptions{
			LogDirs: cfg.LogDirs,
			OfflineDirs: func() []string {
				var out []string
				for _, od := range logs.OfflineDirs() {
					out = append(out, od.Dir)
				}
				return out
			},
			FetchSessionCacheSlots:  sessionSlots(cfg.FetchSessionCacheSlots),
			FetchSessionEvictionMin: cfg.FetchSessionEvictionMin,
		},
	})
	if err != nil {
		return err
	}
	describer.set(srv)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve() }()
	defer srv.Close()

	endpoints, err := advertisedEndpoints(cfg)
	if err != nil {
		return err
	}
	life, err := broker.StartLifecycle(broker.LifecycleOptions{
		NodeID:     cfg.NodeID,
		ClusterID:  clusterID,
		Rack:       cfg.Rack,
		Endpoints:  endpoints,
		Controller: node.Client(),
		Applied:    func() uint64 { _, idx := node.Current(); return idx },
		Interval:   cfg.BrokerHeartbeatInterval,
		Logger:     log.With().Str("component", "lifecycle").Logger(),

		MarkSuspects: raftfsm.SetSuspectedBrokers,
		MarkOffline: func(req *kmsg.BrokerHeartbeatRequest) {
			markOffline(req, logs, replicas, currentImageOf(node), dirIDs)
		},
	})
	if err != nil {
		return err
	}
	lifeRef.Store(life)
	defer life.Close()
	metrics.addNode(node, life)
	metrics.reg.MustRegister(newCatchUpWaits(srv.CatchUpWaits))
	currentImage := func() *metadata.Image { img, _ := node.Current(); return img }
	// Lag of committed partitions with no replica here: their leaders'
	// HWs over the inter-broker listener (metrics_lag_remote.go).
	lagHWs := newRemoteHWs(peers.Request)
	defer lagHWs.Close()
	metrics.reg.MustRegister(newPartitionCollector(replicas.Health, node.IsLeader, currentImage),
		newGroupCollector(groups.Stats, currentImage, replicas.Health, int(cfg.MetricsConsumerLagMaxSeries), lagHWs),
		topicPruner{m: metrics, image: currentImage})

	var cons *console
	if cfg.ConsoleEnable && cfg.MetricsListener == "" {
		log.Warn().Msg("console.enable is set but metrics.listener is not: no web console")
	}
	if cfg.ConsoleEnable && cfg.MetricsListener != "" {
		cons, err = newConsole(consoleDeps{
			NodeID: cfg.NodeID, LogDirs: cfg.LogDirs, Image: currentImage, Health: replicas.Health,
			Groups: groups.Stats, Raft: node.RaftStats, Gatherer: metrics.reg,
			Members: func(id string) ([]consoleMember, error) {
				dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				d, err := groups.Describe(dctx, id)
				var out []consoleMember
				for _, m := range d.Members {
					out = append(out, consoleMember{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, ClientHost: m.ClientHost})
				}
				return out, err
			},
			Records: func(topic string, partition int32, n int) ([]consoleRecord, error) {
				p, err := replicas.Partition(topic, partition)
				if err != nil {
					return nil, err
				}
				return recentRecords(p.Log(), partition, n)
			},
		})
		if err != nil {
			return err
		}
		// The groups page's lag sparklines: a sample every 10 s of the
		// groups coordinated here, as many as the lag metric exports.
		go cons.sampleEvery(ctx, 10*time.Second, max(int(cfg.MetricsConsumerLagMaxSeries), 1))
	}
	if cfg.MetricsListener == "" {
		log.Info().Msg("metrics.listener not set: no /metrics, /healthz or /readyz endpoint")
	} else {
		stopMetrics, err := serveMetrics(cfg.MetricsListener, cfg.MetricsPprofEnable, metrics, readiness{node: node, life: life}, cons, log)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}

	select {
	case <-ctx.Done():
		log.Info().Msg("shutting down")
	case <-node.Done():
		return fmt.Errorf("metadata quorum stopped: %w", node.Err())
	case err := <-serveErr:
		return fmt.Errorf("client listener stopped: %w", err)
	}
	if cfg.ControlledShutdownEnable {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		if err := life.ControlledShutdown(sctx); err != nil {
			log.Warn().Err(err).Msg("controlled shutdown incomplete; stopping anyway")
		} else {
			log.Info().Msg("controlled shutdown complete: this node leads no partition")
		}
		cancel()
	}
	return nil
}

// txnController is the controller as the transaction coordinator uses it:
// its state writes return once committed, without waiting for this node's
// image (the coordinator keeps what it wrote until the image has it).
type txnController struct{ *raftfsm.ControllerClient }

func (t txnController) WriteTxn(ctx context.Context, recs ...metadata.Record) (uint64, error) {
	return t.WriteTxnNoWait(ctx, recs...)
}

// startReplicas starts the partition layer and feeds it every published
// metadata event, in order, from one goroutine. stop ends the feed and the
// manager (fetchers, ISR expiry, waiting produces and fetches); the logs stay
// open for their owner to close.
// initialCatchUpWait bounds the replica manager's wait for the node's
// metadata replay at start (see startReplicas).
const initialCatchUpWait = 5 * time.Second

// offsetsLogRetry is how long the replica feed waits for a new image
// before retrying failed __consumer_offsets writes.
const offsetsLogRetry = 2 * time.Second

func startReplicas(node *raftfsm.Node, logs *storage.Manager, cfg *config.Config, sourceLost func(int32), onOffline func(string, []storage.TopicPartition), log zerolog.Logger) (*replica.Manager, func(), error) {
	clientID := fmt.Sprintf("raftka-replica-%d", cfg.NodeID)
	dial := replica.TCPDialer(clientID, 10*time.Second)
	secured, err := broker.InterBrokerDialer(cfg, 10*time.Second, log)
	if err != nil {
		return nil, nil, err
	}
	if secured != nil {
		dial = replica.ConnDialer(clientID, secured)
	}
	m, err := replica.NewManager(replica.Config{
		BrokerID:               cfg.NodeID,
		Storage:                logs,
		TopicConfig:            broker.ReplicaTopicConfig(cfg),
		Controller:             node.Client(),
		Dial:                   dial,
		InterBrokerListener:    cfg.InterBrokerListenerName,
		Logger:                 log,
		ReplicaLagTimeMax:      cfg.ReplicaLagTimeMax,
		FetchWaitMax:           cfg.ReplicaFetchWaitMax,
		FetchMaxBytes:          int(cfg.ReplicaFetchResponseMaxByte),
		FetchPartitionMaxBytes: int(cfg.ReplicaFetchMaxBytes),
		FetchMinBytes:          int(cfg.ReplicaFetchMinBytes),
		FetchBackoff:           cfg.ReplicaFetchBackoff,
		RequestTimeout:         cfg.ReplicaSocketTimeout,
		NumFetchers:            int(cfg.NumReplicaFetchers),
		SourceLost:             sourceLost,
		OnOffline:              onOffline,
	})
	if err != nil {
		return nil, nil, err
	}
	offsetsLog := broker.NewOffsetsLog(cfg.NodeID, m, log.With().Str("component", "offsets-log").Logger())
	// The node serves (Metadata answers, read-your-writes waits) only
	// images this feed has applied to the partitions, so a client told
	// that this broker leads a partition finds it leading (issue 18, P3).
	node.HoldServing()
	sub := node.Subscribe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A restarted node first has its snapshot's image, then replays
		// what it missed. Its partitions should start from where the
		// cluster is, not lead and follow through that history: wait
		// (bounded: a cluster without a quorum has nothing newer to give)
		// until the node has applied what its Raft log holds, and take
		// queued images together (NextLatest).
		wctx, wcancel := context.WithTimeout(ctx, initialCatchUpWait)
		node.CatchUpLog(wctx)
		wcancel()
		for {
			// Offsets-topic writes that failed are retried when no image
			// comes for a while (a quiet cluster brings none).
			nctx, ncancel := ctx, context.CancelFunc(func() {})
			if offsetsLog.Pending() {
				nctx, ncancel = context.WithTimeout(ctx, offsetsLogRetry)
			}
			ev, err := sub.NextLatest(nctx)
			ncancel()
			if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				offsetsLog.Retry()
				continue
			}
			if err != nil {
				if ctx.Err() == nil {
					log.Error().Err(err).Msg("metadata feed to the replica manager stopped")
				}
				return
			}
			m.Apply(ev.Image, ev.Delta, ev.Reset)
			m.MarkApplied(ev.Index)
			node.Serve(ev.Image, ev.Index)
			// After the replica manager, so the slots the image gives
			// this broker are led by their local partitions.
			offsetsLog.Apply(ev.Image, ev.Delta, ev.Reset)
		}
	}()
	stop := func() {
		cancel()
		sub.Close()
		<-done
		if err := m.Close(); err != nil {
			log.Warn().Err(err).Msg("closing the replica manager")
		}
	}
	return m, stop, nil
}

// configDescriber hands the controller listener the node's broker's
// DescribeConfigs once the broker exists (it starts after Raft).
type configDescriber struct {
	srv   atomic.Pointer[broker.Server]
	ready chan struct{}
}

func newConfigDescriber() *configDescriber { return &configDescriber{ready: make(chan struct{})} }

func (d *configDescriber) set(s *broker.Server) {
	d.srv.Store(s)
	close(d.ready)
}

// describe waits for the broker (nil if ctx ends first).
func (d *configDescriber) describe(ctx context.Context, principal, host string, req *kmsg.DescribeConfigsRequest) *kmsg.DescribeConfigsResponse {
	select {
	case <-d.ready:
	case <-ctx.Done():
		return nil
	}
	return d.srv.Load().DescribeConfigsFor(principal, host, req)
}

func startRaft(cfg *config.Config, clusterID string, log zerolog.Logger, obs raftfsm.Observer, m broker.Metrics, describer *configDescriber) (*raftfsm.Node, error) {
	rc := raftfsm.Config{
		DescribeConfigs:          describer.describe,
		Observer:                 obs,
		NodeID:                   cfg.NodeID,
		Voter:                    cfg.Roles.Controller,
		DataDir:                  filepath.Join(cfg.MetadataLogDir, "raft"),
		ClusterID:                clusterID,
		HeartbeatInterval:        cfg.BrokerHeartbeatInterval,
		SessionTimeout:           cfg.BrokerSessionTimeout,
		SnapshotThreshold:        cfg.SnapshotThreshold,
		SnapshotInterval:         cfg.SnapshotInterval,
		TrailingLogs:             cfg.SnapshotTrailingLogs,
		DefaultPartitions:        cfg.NumPartitions,
		DefaultReplicationFactor: cfg.DefaultReplicationFactor,
		TopicDeletionDisabled:    !cfg.DeleteTopicEnable,

		DefaultUncleanLeaderElection:  cfg.UncleanLeaderElectionEnable,
		DefaultMinInsyncReplicas:      int(cfg.MinInsyncReplicas),
		AutoLeaderRebalance:           cfg.AutoLeaderRebalanceEnable,
		LeaderImbalanceCheckInterval:  cfg.LeaderImbalanceCheckInterval,
		OffsetsRetention:              cfg.OffsetsRetention,
		OffsetsRetentionCheckInterval: cfg.OffsetsRetentionCheckInterval,
		// Kafka 4's KRaft controller moves every misplaced leader on each
		// check and ignores leader.imbalance.per.broker.percentage; so do
		// we, so a rolling restart ends with every preferred leader back.
		LeaderImbalancePerBrokerPercentage: 0,
		Logger:                             log.With().Str("component", "raft").Logger(),
	}
	for _, v := range cfg.Voters {
		rc.Voters = append(rc.Voters, raftfsm.Voter{ID: v.ID, Addr: v.Addr()})
	}
	rc.BootstrapServers = cfg.BootstrapServers
	initial, err := readVoters(cfg.MetadataLogDir)
	if err != nil {
		return nil, err
	}
	rc.InitialVoters = initial
	if m, err := storage.ReadMetaProperties(cfg.MetadataLogDir); err == nil && m.DirectoryID != "" {
		if u, err := storage.ParseUUID(m.DirectoryID); err == nil {
			rc.DirectoryID = u
		}
	}
	if cfg.ElectionTimeout > 0 {
		// controller.quorum.election.timeout.ms is KRaft's knob for how
		// fast a lost leader is replaced; hashicorp/raft splits it into a
		// follower's heartbeat timeout and a candidate's election timeout.
		rc.RaftHeartbeatTimeout = cfg.ElectionTimeout
		rc.RaftElectionTimeout = cfg.ElectionTimeout
		rc.RaftLeaderLeaseTimeout = cfg.ElectionTimeout / 2
	}
	boot, err := readBootstrap(cfg.MetadataLogDir)
	if err != nil {
		return nil, err
	}
	rc.BootstrapRecords = boot
	if l, ok := cfg.ControllerListener(); ok {
		rc.ListenAddr = l.Addr()
		rc.ControllerListenerName = l.Name
		if ip := net.ParseIP(l.Host); len(cfg.Voters) == 0 && l.Host != "" && (ip == nil || !ip.IsUnspecified()) {
			// Dynamic quorum: the listener, not storage format's list, is
			// where this node is now (a moved voter sends UpdateRaftVoter).
			rc.AdvertisedAddr = l.Addr()
		}
	} else {
		return nil, errors.New("no controller listener: broker-only nodes need one for the metadata log (listeners=...,CONTROLLER://host:port)")
	}
	var started atomic.Pointer[raftfsm.Node]
	if err := controllerSecurity(&rc, cfg, boot, &started, m, log); err != nil {
		return nil, err
	}
	node, err := raftfsm.Start(rc)
	if err != nil {
		return nil, err
	}
	started.Store(node)
	return node, nil
}

func advertisedEndpoints(cfg *config.Config) ([]metadata.Endpoint, error) {
	var eps []metadata.Endpoint
	for _, l := range cfg.AdvertisedListeners {
		host := l.Host
		if host == "" {
			h, err := os.Hostname()
			if err != nil {
				return nil, fmt.Errorf("advertised listener %s has no host and the hostname is unknown: %w", l.Name, err)
			}
			host = h
		}
		if l.Port <= 0 || l.Port > 65535 {
			return nil, fmt.Errorf("advertised listener %s: port %d out of range", l.Name, l.Port)
		}
		eps = append(eps, metadata.Endpoint{Listener: l.Name, Host: host, Port: uint16(l.Port), SecurityProtocol: securityProtocolID(l.SecurityProtocol)})
	}
	return eps, nil
}

// topicStorageConfig resolves a topic's log config from its overrides in the
// metadata image and this node's server.properties, by Kafka's precedence.
// logClean logs what each clean of the log cleaner did.
// busyCleanerIO maps raftka.log.cleaner.busy.io.max.bytes.per.second to
// storage's option, where 0 means the default and +Inf none.
func busyCleanerIO(bytesPerSecond int64) float64 {
	if bytesPerSecond == 0 {
		return math.Inf(1)
	}
	return float64(bytesPerSecond)
}

func logClean(log zerolog.Logger) func(storage.TopicPartition, storage.CleanStats, error) {
	return func(tp storage.TopicPartition, st storage.CleanStats, err error) {
		if err != nil {
			log.Warn().Err(err).Stringer("partition", tp).Msg("log cleaner")
			return
		}
		log.Info().Stringer("partition", tp).Int64("first_dirty", st.FirstDirty).Int64("end", st.End).
			Int("segments_read", st.SegmentsRead).Int("segments_written", st.SegmentsWritten).
			Int64("bytes_read", st.BytesRead).Int64("bytes_written", st.BytesWritten).
			Int64("records_read", st.RecordsRead).Int64("records_kept", st.RecordsKept).Msg("log cleaned")
	}
}

func topicStorageConfig(node *raftfsm.Node, cfg *config.Config, topic string) storage.Config {
	img, _ := node.Current()
	return broker.StorageConfig(img, cfg, topic)
}

type readiness struct {
	node *raftfsm.Node
	life *broker.Lifecycle
}

// ready is /readyz: the node has a Raft leader to follow and the controller
// has unfenced its broker, so it can take client traffic.
func (r readiness) ready() (bool, string) {
	if r.node.LeaderID() < 0 {
		return false, "no metadata quorum leader known"
	}
	if r.life.Epoch() < 0 {
		return false, "broker not registered with the controller"
	}
	if r.life.Fenced() {
		return false, "broker fenced (catching up with the metadata log)"
	}
	return true, "ready"
}

// sessionSlots maps max.incremental.fetch.session.cache.slots onto
// PartitionOptions, where zero means the default and negative means off.
func sessionSlots(n int32) int {
	if n == 0 {
		return -1
	}
	return int(n)
}

// logRecovery reports what opening the logs found: one summary line, and a
// warning for each log that lost data or needed repair, so a node with
// thousands of partitions does not print a line per clean partition.
func logRecovery(log zerolog.Logger, reports []*storage.RecoveryReport) {
	var clean, rescanned int
	for _, r := range reports {
		if r.Clean {
			clean++
			continue
		}
		rescanned++
		if r.LostData() || len(r.RebuiltIndexes) > 0 || len(r.DeletedSegments) > 0 || r.Reset || len(r.CorruptSnapshots) > 0 {
			log.Warn().Interface("recovery", r).Msg("log repaired after an unclean stop")
		}
	}
	if rescanned > 0 {
		log.Warn().Int("rescanned", rescanned).Int("clean", clean).Msg("logs rescanned after an unclean stop")
	} else {
		log.Info().Int("logs", clean).Msg("logs opened after a clean shutdown")
	}
}

// idleLimit maps connections.max.idle.ms to broker.Options: negative never
// closes (Kafka's Selector then has no idle expiry), and Kafka's 0, which
// closes a connection at its first idle moment, becomes the shortest
// deadline that means the same.
func idleLimit(d time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d == 0:
		return time.Millisecond
	}
	return d
}

// securityProtocolID is Kafka's SecurityProtocol id, as registrations carry it.
func securityProtocolID(p string) int16 {
	switch p {
	case "SSL":
		return 1
	case "SASL_PLAINTEXT":
		return 2
	case "SASL_SSL":
		return 3
	}
	return 0
}

// groupConfigOverrides reads a group's consumer.session.timeout.ms and
// consumer.heartbeat.interval.ms (GROUP config resource) from the image,
// kept within the broker's group.consumer.min/max bounds as Kafka's
// GroupConfig does.
func groupConfigOverrides(cfg *config.Config) func(img *metadata.Image, group string) (time.Duration, time.Duration) {
	ms := func(m map[string]string, key string, lo, hi time.Duration) time.Duration {
		n, err := strconv.ParseInt(m[key], 10, 32)
		if err != nil || n <= 0 {
			return 0
		}
		return min(max(time.Duration(n)*time.Millisecond, lo), hi)
	}
	return func(img *metadata.Image, group string) (time.Duration, time.Duration) {
		m := img.GroupConfigs(group)
		if len(m) == 0 {
			return 0, 0
		}
		return ms(m, "consumer.session.timeout.ms", cfg.GroupConsumerMinSessionTimeout, cfg.GroupConsumerMaxSessionTimeout),
			ms(m, "consumer.heartbeat.interval.ms", cfg.GroupConsumerMinHeartbeatInterval, cfg.GroupConsumerMaxHeartbeatInterval)
	}
}

func currentImageOf(node *raftfsm.Node) func() *metadata.Image {
	return func() *metadata.Image { img, _ := node.Current(); return img }
}

// markOffline fills a heartbeat with this broker's failed log dirs (Kafka's
// OfflineLogDirs, by directory.id) and the replicas that were in them
// (raftfsm.SetOfflineReplicas), every heartbeat, so a new controller
// learns them too.
func markOffline(req *kmsg.BrokerHeartbeatRequest, logs *storage.Manager, replicas *replica.Manager, image func() *metadata.Image, dirIDs map[string]string) {
	for _, od := range logs.OfflineDirs() {
		if id, err := storage.ParseUUID(dirIDs[od.Dir]); err == nil {
			req.OfflineLogDirs = append(req.OfflineLogDirs, id)
		}
	}
	parts := replicas.OfflinePartitions()
	if len(parts) == 0 {
		return
	}
	img := image()
	if img == nil {
		return
	}
	var refs []metadata.ReplicaRef
	for tp := range parts {
		if t, ok := img.Topic(tp.Topic); ok {
			refs = append(refs, metadata.ReplicaRef{TopicID: t.ID, Partition: tp.Partition})
		}
	}
	raftfsm.SetOfflineReplicas(req, refs)
}
