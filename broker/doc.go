// Package broker is the Kafka protocol server and everything behind a request:
// connection handling, the one table of implemented APIs from which
// ApiVersions is built, and one file per API (api_*.go).
//
// # What it owns
//
//   - server.go: Server lifecycle (New binds listeners, Serve accepts, Close
//     stops everything and waits), Options, and Deps: the small interfaces
//     handlers need from the rest of the node, defined here and grown as API
//     files land.
//   - conn.go: one connection: framing, the socket.request.max.bytes limit,
//     request dispatch and the in-order response writer; conn_idle.go:
//     connections.max.idle.ms.
//   - auth_conn.go: what a secured listener does before a connection's
//     first request: auth_tls.go, the TLS handshake (keystores and
//     truststores as PEM or PKCS12, ssl.client.auth, protocols, suites);
//     auth_sasl.go, the SASL exchange (SaslHandshake, SaslAuthenticate or
//     bare v0 tokens; PLAIN against auth_jaas.go's JAAS parse, SCRAM
//     against the metadata image); auth_client.go, the same from the
//     client side for follower fetch on a secured inter-broker listener;
//     auth_configs.go, the security keys in DescribeConfigs.
//   - header.go: request header v1/v2 parsing.
//   - dispatch.go: the API table and the handler contract.
//   - response.go, sendfile_*.go: responses made of encoded bytes and file
//     regions, sent with sendfile(2) on Linux.
//   - errors.go: handlers' access to the one mapping from our packages'
//     error kinds to Kafka error codes, which lives in broker/kafkacode so
//     broker/replica and raftfsm's controller answer with the same codes.
//   - metrics.go: the Metrics interface and in-memory Counters;
//     response_errors.go: each request's end (its total time and the error
//     codes its response carries) reported to Metrics.
//   - produce_refusals.go: counting (by reason and bounded client id) and
//     rate-limited logging of produced batches refused for their content.
//   - api_<name>.go: one per Kafka API, each registering itself in init and
//     opening with its supported versions and behaviour. The table they fill
//     is the list of what is served: ApiVersions answers with exactly it.
//     An api file holds its one API; what two of them use lives in a file
//     named for what it is (listed below).
//   - lifecycle.go: the broker's registration and heartbeats with the
//     active controller (fencing, controlled shutdown).
//   - partitions.go, fetch_session.go: the partition APIs' view of the
//     replica manager (ReplicaManager, the catch-up before a stale answer)
//     and KIP-227 fetch sessions.
//   - leader_hints.go: where a client should go instead (CurrentLeader and
//     NodeEndpoints of Produce and Fetch).
//   - groups.go: the group APIs' view of the group coordinator
//     (GroupCoordinator) and their shared request helpers.
//   - api_share_group_*.go: the share group APIs (76, 77) and their view of
//     the share group coordinator (ShareGroupCoordinator, in
//     api_share_group_heartbeat.go); api_share_group_list.go is what the
//     classic group APIs ask of it (ListGroups, DeleteGroups, kind checks).
//   - txns.go: the transaction APIs' view of the transaction coordinator
//     (TxnCoordinator); the inter-broker client (InterBrokerClient) and the
//     coordinator's marker path (TxnMarkers: local replicas or
//     WriteTxnMarkers to the leader); a produce's KIP-890 verification
//     with the coordinator.
//   - configs.go: what the config APIs share (resource prechecks, broker/
//     config's key table indexed for DescribeConfigs and
//     IncrementalAlterConfigs).
//   - kafka_keys.go, kafka_keys_table.go: Kafka 4.1's broker and topic
//     config keys, and how the config APIs answer those raftka does not
//     apply; CONFIG-KEYS.md, the list of keys for users, generated from the
//     tables by a test.
//   - topic_config.go: a topic's effective config by Kafka's precedence.
//   - authorized_ops.go: authorization. Every handler asks
//     request.authorize (authorizeCluster, authorizeByResourceType,
//     authorizedOps for KIP-430 sets) with Kafka's operation and resource
//     before it acts, and answers Kafka's code (TOPIC_, GROUP_, CLUSTER_,
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED) where KafkaApis does; the
//     decision is metadata.Authorizer's over the current image for the
//     connection's principal and client IP. No authorizer (the default)
//     allows everything. api_create_acls.go, api_describe_acls.go,
//     api_delete_acls.go serve the ACL APIs.
//   - quota.go: client quotas: produce and fetch bytes charged to the
//     entity metadata.Image.ResolveQuota names, windowed rates; over a
//     quota the answer carries throttle_time_ms and the connection's next
//     request waits that long (KIP-219; older versions get the answer
//     itself delayed); follower fetches are never throttled;
//     controller_mutation_rate's token bucket for CreateTopics,
//     CreatePartitions and DeleteTopics (KIP-599).
//     api_describe_client_quotas.go and api_alter_client_quotas.go serve
//     the quota APIs.
//   - internal_topics.go: names no client may create or configure.
//   - offsets_log.go: OffsetsLog, which writes the image's commits and
//     generations into the __consumer_offsets partitions this broker leads
//     (records from broker/group, batches from storage/recordbatch: off the
//     client hot path); clients' produce to internal topics is refused.
//   - forward.go: forwarding admin requests to the active controller.
//   - producer_ids.go: this broker's producer ids, in blocks the controller
//     allocates.
//   - statfs_*.go: a log dir's disk space for DescribeLogDirs.
//
// # Adding an API
//
// An api_<name>.go file calls register(apiEntry{...}) from init with the
// key, the version range, whether the handler may overlap later requests of
// its connection (concurrent), and the handler. The handler gets a context
// cancelled when its connection or the server closes, a *request (connection
// state, client id, correlation id, release), and the decoded kmsg request
// at a version within the range; it returns the response (or nil for no
// answer) or an error that closes the connection. ApiVersions advertises
// exactly the table, so registering is advertising.
//
// # Goroutines and locks
//
// Server: one accept goroutine per listener, started by Serve. Each
// connection has a reader goroutine (reads frames, decodes, queues a slot per
// request in arrival order, starts its handler), one goroutine per in-flight
// request running its handler, and a writer goroutine that writes slots in
// queue order as they complete. The queue is bounded (Options.MaxInFlight),
// so a client that pipelines ahead stops being read. A non-concurrent API
// holds the reader until its handler returns or calls request.release, so
// side effects on one connection happen in request order, as in Kafka;
// different connections run in parallel. Any failure cancels the
// connection's context, which closes the socket and unblocks all three
// kinds of goroutine; Close cancels every connection and waits for every
// goroutine, handlers included. Each goroutine recovers panics: a panic is
// logged with its stack and closes only its connection.
//
// On a secured listener (auth_conn.go) the reader goroutine first runs the
// TLS handshake (auth_tls.go) and SASL authentication (auth_sasl.go) alone,
// before the writer starts; only an authenticated connection reaches
// dispatch, so no handler sees a request from an unauthenticated client.
//
// The API table is built in init and read-only afterwards. Server.mu guards
// only the closed/serving flags and adding to the server's WaitGroup;
// refusals.mu only the refused-producer table, released before metrics or
// logging. No lock is held across calls, so there is no lock order to keep.
//
// # Imports
//
// It imports storage, metadata and its own subpackages; it reaches raftfsm
// only through the interfaces of server.go, which cmd fills with raftfsm's
// types. Nothing of ours imports the root broker package except cmd; its
// subpackages (config, coordslot, group, kafkacode, replica, share: the
// pure share-partition state machine the share_*.go files drive) never
// import it, and
// raftfsm imports broker/kafkacode alone. It must not import a metrics
// library (Metrics is an interface; cmd adapts it to Prometheus) or
// anything from cmd or test. PKCS12 keystores are decoded by go-pkcs12
// (a maintained decoder; the format is not parsed by hand).
//
//arch:imports std storage storage/recordbatch metadata broker/config broker/group broker/group/consumergroup broker/txn broker/kafkacode broker/replica
//arch:imports github.com/twmb/franz-go/pkg/kmsg github.com/twmb/franz-go/pkg/kerr
//arch:imports github.com/rs/zerolog
//arch:imports software.sslmate.com/src/go-pkcs12 github.com/xdg-go/scram
//arch:imports broker/group/sharegroup broker/share broker/coordslot
//arch:importers cmd/...
package broker
