package broker

// Fetch (key 1): v4-v18, as Kafka 4.
//
// Behaviour (Kafka's KafkaApis.handleFetchRequest and
// ReplicaManager.fetchMessages):
//   - Consumers (replica id -1; ReplicaState.ID from v15) read up to the high
//     watermark (read_committed: the last stable offset, with the aborted
//     transactions in what they read; the LSO is the HW while no
//     transaction is open). MaxWaitMillis / MinBytes long-poll in the
//     replica manager's delayed-fetch purgatory, woken by appends and HW
//     moves; MaxBytes bounds the answer and PartitionMaxBytes each partition,
//     except that the first batch found is always whole so consumers make
//     progress. Per partition: OFFSET_OUT_OF_RANGE, NOT_LEADER_OR_FOLLOWER,
//     FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (CurrentLeaderEpoch, v9+),
//     UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID (v13+), a DivergingEpoch
//     instead of records when LastFetchedEpoch ends before the fetch offset
//     (v12+), HighWatermark, LastStableOffset, LogStartOffset, and
//     PreferredReadReplica -1 (no follower fetching for consumers).
//   - Incremental fetch sessions (KIP-227): see fetch_session.go.
//   - Followers (replica id >= 0) are served by the replica manager
//     (replica.Manager.ServeFetchRegions: sessionless), which also records
//     their fetch offsets for the HW and the ISR; their records go out with
//     sendfile like a consumer's.
//   - Zero copy: a consumer's answer is encoded here by hand around the
//     record regions (appendFetchResponse), and the regions go from the
//     segment files to the socket with sendfile. The encoding is tested byte
//     for byte against kmsg's own at every version.
//
// Version notes: v4: LastStableOffset, AbortedTransactions (null under
// read_uncommitted, a list, maybe empty, under read_committed). v5:
// LogStartOffset. v7: sessions, top-level ErrorCode. v9: CurrentLeaderEpoch.
// v11: Rack (ignored), PreferredReadReplica. v12: flexible, LastFetchedEpoch,
// DivergingEpoch, CurrentLeader. v13: topic ids. v15: ReplicaState. v16:
// NodeEndpoints for the leaders named in CurrentLeader. v17: directory ids
// (followers only). v18: the follower's HighWatermark (KIP-1166).

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{
		key:           1,
		advertisedMin: 4, min: 4, max: 18,
		// A long poll must not hold the connection; a fetch has no side
		// effect whose order matters except session epochs, which clients
		// never pipeline.
		concurrent: true,
		handle:     handleFetch,
	})
}

// anyStale reports a partition answered with an error that a replica
// manager behind the metadata image gives (see Server.catchUp).
func anyStale(results []replica.ReadResult) bool {
	for _, r := range results {
		if r.Err != nil && staleAnswer(r.Err) {
			return true
		}
	}
	return false
}

// anyStaleCode is anyStale for an answered Fetch.
func anyStaleCode(resp *kmsg.FetchResponse) bool {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 && staleAnswer(kerr.ErrorForCode(p.ErrorCode)) {
				return true
			}
		}
	}
	return false
}

func handleFetch(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.FetchRequest)
	srv := rc.conn.srv
	if req.MaxWaitMillis > 0 {
		// A wait in the delayed-fetch purgatory ends the local time.
		ctx = replica.WithDelayHook(ctx, rc.localComplete)
	}
	replicaID := req.ReplicaID
	if req.Version >= 15 {
		replicaID = req.ReplicaState.ID
	}
	if replicaID >= 0 && !rc.authorizeCluster(opClusterAction) {
		// Only brokers (CLUSTER_ACTION) fetch as replicas; Kafka answers
		// anyone else TOPIC_AUTHORIZATION_FAILED on every partition.
		return refuseReplicaFetch(req), nil
	}
	if replicaID >= 0 && srv.deps.Replicas != nil {
		rc.fromReplica = true
		// A follower that learned of a new leadership before this leader's
		// partitions did is refused; answered so, it would back off. Catch
		// up and serve it again instead (only then: on the Raft leader an
		// entry is nearly always in flight, and waiting for it on every
		// follower fetch would slow replication down).
		//
		// Followers read every produced byte; send it from the segment
		// files instead of copying it through a buffer and kmsg.
		resp, regions := srv.deps.Replicas.ServeFetchRegions(ctx, req)
		if anyStaleCode(resp) && srv.catchUp(ctx, rc) {
			resp, regions = srv.deps.Replicas.ServeFetchRegions(ctx, req)
		}
		return newFilesResponse(resp, nil, appendFetchResponse(resp, regions)...), nil
	}

	img := srv.image()
	resolve := func(id [16]byte) (string, bool) {
		t, ok := img.TopicByID(id)
		return t.Name, ok
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	fc := srv.parts.sessions.open(req, resolve)
	if fc.errCode != 0 {
		resp.ErrorCode = fc.errCode
		return resp, nil
	}

	fr := replica.FetchRequest{
		ReplicaID: -1,
		MaxWait:   time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond,
		MinBytes:  int(req.MinBytes),
		MaxBytes:  int(req.MaxBytes),
		Isolation: req.IsolationLevel,
	}
	readAt := make([]int, len(fc.targets)) // index into fr.Parts, -1 for an unknown topic, -2 unauthorized
	readable := map[string]bool{}
	for i, t := range fc.targets {
		readAt[i] = -1
		if t.topic == "" {
			continue
		}
		ok, seen := readable[t.topic]
		if !seen {
			ok = rc.authorize(opRead, resTopic, t.topic)
			readable[t.topic] = ok
		}
		if !ok {
			readAt[i] = -2
			continue
		}
		readAt[i] = len(fr.Parts)
		fr.Parts = append(fr.Parts, replica.FetchPartition{
			Topic: t.topic, Partition: t.partition, Offset: t.offset, MaxBytes: t.maxBytes,
			CurrentLeaderEpoch: t.currentLeaderEpoch, LastFetchedEpoch: t.lastFetchedEpoch,
			KnownHighWatermark: -1,
		})
	}
	var results []replica.ReadResult
	switch {
	case len(fr.Parts) == 0:
	case srv.deps.Replicas == nil:
		results = make([]replica.ReadResult, len(fr.Parts))
		for i := range results {
			results[i] = replica.ReadResult{HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1, Err: errNoReplicas}
		}
	default:
		results = srv.deps.Replicas.Fetch(ctx, fr)
		if anyStale(results) && srv.catchUp(ctx, rc) {
			results = srv.deps.Replicas.Fetch(ctx, fr)
		}
	}

	parts := make([]kmsg.FetchResponseTopicPartition, len(fc.targets))
	regions := make([]storage.Region, len(fc.targets))
	outcomes := make([]fetchOutcome, len(fc.targets))
	for i, t := range fc.targets {
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition = t.partition
		if req.IsolationLevel == replica.ReadCommitted {
			rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
		}
		if readAt[i] < 0 {
			rp.ErrorCode = kerr.UnknownTopicID.Code
			if readAt[i] == -2 {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			}
			rp.HighWatermark = -1
		} else {
			r := results[readAt[i]]
			rp.ErrorCode = errorCode(r.Err)
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = r.HighWatermark, r.LastStableOffset, r.LogStartOffset
			if r.Diverging != nil {
				rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = r.Diverging.Epoch, r.Diverging.EndOffset
			}
			if r.Err == nil {
				regions[i] = r.Region
				for _, a := range r.AbortedTransactions {
					at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
					rp.AbortedTransactions = append(rp.AbortedTransactions, at)
				}
			}
		}
		rp.RecordBatches = []byte{}
		outcomes[i] = fetchOutcome{
			hw: rp.HighWatermark, lso: rp.LastStableOffset, logStart: rp.LogStartOffset,
			mustAnswer: rp.ErrorCode != 0 || regions[i].Len > 0 || rp.DivergingEpoch.Epoch != -1,
		}
		parts[i] = rp
	}
	include, sessionID := srv.parts.sessions.finish(&fc, outcomes)
	resp.SessionID = sessionID

	// Group the included partitions by topic, in first-seen order.
	var partRegions [][]storage.Region
	topicAt := map[sessionKey]int{}
	hints := map[int32]bool{}
	for i, t := range fc.targets {
		if !include[i] {
			continue
		}
		rp := parts[i]
		if req.Version >= 12 && wantsLeaderHint(rp.ErrorCode) && t.topic != "" {
			if h, ok := leaderOf(img, t.topic, t.partition, rc.conn.listener); ok {
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = h.leader, h.epoch
				hints[h.leader] = true
			}
		}
		tk := t.key
		tk.partition = 0
		ti, ok := topicAt[tk]
		if !ok {
			ti = len(resp.Topics)
			topicAt[tk] = ti
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic, rt.TopicID = t.key.name, t.id
			if req.Version >= 13 {
				rt.Topic = t.topic
			}
			resp.Topics = append(resp.Topics, rt)
			partRegions = append(partRegions, nil)
		}
		resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, rp)
		partRegions[ti] = append(partRegions[ti], regions[i])
		if n := regions[i].Len; n > 0 {
			srv.metrics.TopicFetched(t.topic, int64(n))
		}
	}
	if req.Version >= 16 {
		resp.Brokers = fetchEndpoints(img, hints, rc.conn.listener)
	}
	// consumer_byte_rate: the answer's record bytes, held back by the
	// throttle time (quota.go); follower fetches never get here.
	fetched := 0
	for _, rs := range partRegions {
		for _, r := range rs {
			fetched += int(r.Len)
		}
	}
	resp.ThrottleMillis = rc.throttle(ctx, metadata.QuotaConsumerByteRate, fetched, req.Version >= 8)
	return newFilesResponse(resp, nil, appendFetchResponse(resp, partRegions)...), nil
}

// refuseReplicaFetch answers a replica fetch from a principal without
// CLUSTER_ACTION: every partition it names TOPIC_AUTHORIZATION_FAILED.
func refuseReplicaFetch(req *kmsg.FetchRequest) *kmsg.FetchResponse {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
			rp.RecordBatches = []byte{}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// fetchEndpoints is Fetch v16+'s NodeEndpoints: the leaders named in
// CurrentLeader fields, on the request's listener.
func fetchEndpoints(img *metadata.Image, ids map[int32]bool, listener string) []kmsg.FetchResponseBroker {
	var out []kmsg.FetchResponseBroker
	for _, pb := range produceEndpoints(img, ids, listener) {
		fb := kmsg.NewFetchResponseBroker()
		fb.NodeID, fb.Host, fb.Port, fb.Rack = pb.NodeID, pb.Host, pb.Port, pb.Rack
		out = append(out, fb)
	}
	return out
}

// appendFetchResponse encodes resp (at resp.Version) as body parts, with the
// records of partition j of topic i taken from regions[i][j] when that
// region is not empty (a file part sent with sendfile), else from the
// partition's RecordBatches. It writes exactly what resp.AppendTo writes when
// RecordBatches holds the regions' bytes; unknown tags are not supported
// (the broker never sets any).
func appendFetchResponse(resp *kmsg.FetchResponse, regions [][]storage.Region) []bodyPart {
	v := resp.Version
	flex := v >= 12
	var parts []bodyPart
	b := make([]byte, 0, 256)
	if v >= 1 {
		b = binary.BigEndian.AppendUint32(b, uint32(resp.ThrottleMillis))
	}
	if v >= 7 {
		b = binary.BigEndian.AppendUint16(b, uint16(resp.ErrorCode))
		b = binary.BigEndian.AppendUint32(b, uint32(resp.SessionID))
	}
	b = appendLen(b, len(resp.Topics), flex)
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		if v <= 12 {
			b = appendStr(b, t.Topic, flex)
		} else {
			b = append(b, t.TopicID[:]...)
		}
		b = appendLen(b, len(t.Partitions), flex)
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			b = binary.BigEndian.AppendUint32(b, uint32(p.Partition))
			b = binary.BigEndian.AppendUint16(b, uint16(p.ErrorCode))
			b = binary.BigEndian.AppendUint64(b, uint64(p.HighWatermark))
			if v >= 4 {
				b = binary.BigEndian.AppendUint64(b, uint64(p.LastStableOffset))
			}
			if v >= 5 {
				b = binary.BigEndian.AppendUint64(b, uint64(p.LogStartOffset))
			}
			if v >= 4 {
				at := p.AbortedTransactions
				switch {
				case at == nil && flex:
					b = append(b, 0)
				case at == nil:
					b = binary.BigEndian.AppendUint32(b, 0xffffffff)
				default:
					b = appendLen(b, len(at), flex)
				}
				for _, a := range at {
					b = binary.BigEndian.AppendUint64(b, uint64(a.ProducerID))
					b = binary.BigEndian.AppendUint64(b, uint64(a.FirstOffset))
					if flex {
						b = append(b, 0)
					}
				}
			}
			if v >= 11 {
				b = binary.BigEndian.AppendUint32(b, uint32(p.PreferredReadReplica))
			}
			var region storage.Region
			if ti < len(regions) && pi < len(regions[ti]) {
				region = regions[ti][pi]
			}
			switch {
			case region.Len > 0:
				b = appendBytesLen(b, int(region.Len), flex)
				parts = append(parts, partBytes(b), partFile(region.File, region.Pos, region.Len))
				b = make([]byte, 0, 256)
			case p.RecordBatches == nil && flex:
				b = append(b, 0)
			case p.RecordBatches == nil:
				b = binary.BigEndian.AppendUint32(b, 0xffffffff)
			default:
				b = appendBytesLen(b, len(p.RecordBatches), flex)
				b = append(b, p.RecordBatches...)
			}
			if flex {
				b = appendPartitionTags(b, p)
			}
		}
		if flex {
			b = append(b, 0)
		}
	}
	if flex {
		if len(resp.Brokers) == 0 {
			b = append(b, 0)
		} else {
			var body []byte
			body = appendLen(body, len(resp.Brokers), true)
			for _, br := range resp.Brokers {
				body = binary.BigEndian.AppendUint32(body, uint32(br.NodeID))
				body = appendStr(body, br.Host, true)
				body = binary.BigEndian.AppendUint32(body, uint32(br.Port))
				if br.Rack == nil {
					body = append(body, 0)
				} else {
					body = appendStr(body, *br.Rack, true)
				}
				body = append(body, 0)
			}
			b = append(b, 1, 0) // one tag, tag 0
			b = binary.AppendUvarint(b, uint64(len(body)))
			b = append(b, body...)
		}
	}
	return append(parts, partBytes(b))
}

// appendPartitionTags writes a partition's tagged fields: DivergingEpoch
// (0), CurrentLeader (1) and SnapshotID (2), each only when not default.
func appendPartitionTags(b []byte, p *kmsg.FetchResponseTopicPartition) []byte {
	div := p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1
	cur := p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1
	snap := p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1
	n := 0
	for _, set := range []bool{div, cur, snap} {
		if set {
			n++
		}
	}
	b = binary.AppendUvarint(b, uint64(n))
	if div {
		b = append(b, 0, 13)
		b = binary.BigEndian.AppendUint32(b, uint32(p.DivergingEpoch.Epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(p.DivergingEpoch.EndOffset))
		b = append(b, 0)
	}
	if cur {
		b = append(b, 1, 9)
		b = binary.BigEndian.AppendUint32(b, uint32(p.CurrentLeader.LeaderID))
		b = binary.BigEndian.AppendUint32(b, uint32(p.CurrentLeader.LeaderEpoch))
		b = append(b, 0)
	}
	if snap {
		b = append(b, 2, 13)
		b = binary.BigEndian.AppendUint64(b, uint64(p.SnapshotID.EndOffset))
		b = binary.BigEndian.AppendUint32(b, uint32(p.SnapshotID.Epoch))
		b = append(b, 0)
	}
	return b
}

// appendLen writes an array length (compact: n+1 as a uvarint).
func appendLen(b []byte, n int, flex bool) []byte {
	if flex {
		return binary.AppendUvarint(b, uint64(n)+1)
	}
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

// appendBytesLen writes the length prefix of a non-null bytes field.
func appendBytesLen(b []byte, n int, flex bool) []byte { return appendLen(b, n, flex) }

func appendStr(b []byte, s string, flex bool) []byte {
	if flex {
		b = binary.AppendUvarint(b, uint64(len(s))+1)
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	}
	return append(b, s...)
}
