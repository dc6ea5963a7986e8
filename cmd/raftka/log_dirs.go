package main

// `raftka log-dirs describe`, as kafka-log-dirs.sh --describe: every log
// dir of the brokers asked (all by default), with its error and the
// partitions it holds, as the same JSON document. A failed log dir shows
// "error":"org.apache.kafka.common.errors.KafkaStorageException", the
// class name Kafka's tool prints.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:  "log-dirs",
		Usage: "inspect the brokers' log directories, as kafka-log-dirs.sh",
		Subcommands: []*cli.Command{{
			Name:  "describe",
			Usage: "print each log dir of the brokers (its error, partitions, sizes) as kafka-log-dirs.sh --describe's JSON",
			Flags: []cli.Flag{bootstrapFlag(), requestTimeoutFlag(),
				&cli.StringFlag{Name: "broker-list", Usage: "comma-separated broker ids (default: every broker)"},
				&cli.StringFlag{Name: "topic-list", Usage: "comma-separated topics (default: every topic)"},
			},
			Action: logDirsDescribe,
		}},
	})
}

type logDirsDoc struct {
	Brokers []logDirsBroker `json:"brokers"`
	Version int             `json:"version"`
}

type logDirsBroker struct {
	Broker  int32        `json:"broker"`
	LogDirs []logDirJSON `json:"logDirs"`
}

type logDirJSON struct {
	Partitions []logDirPartition `json:"partitions"`
	Error      *string           `json:"error"`
	LogDir     string            `json:"logDir"`
}

type logDirPartition struct {
	Partition string `json:"partition"`
	Size      int64  `json:"size"`
	OffsetLag int64  `json:"offsetLag"`
	IsFuture  bool   `json:"isFuture"`
}

// kafkaExceptionClass names an error code as kafka-log-dirs.sh prints it.
func kafkaExceptionClass(code int16) string {
	switch code {
	case kerr.KafkaStorageError.Code:
		return "org.apache.kafka.common.errors.KafkaStorageException"
	case kerr.ClusterAuthorizationFailed.Code:
		return "org.apache.kafka.common.errors.ClusterAuthorizationException"
	}
	return kerr.ErrorForCode(code).Error()
}

func parseIDs(s string) ([]int32, error) {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("--broker-list: %q is not a broker id", f)
		}
		out = append(out, int32(n))
	}
	return out, nil
}

func logDirsDescribe(c *cli.Context) error {
	ids, err := parseIDs(c.String("broker-list"))
	if err != nil {
		return err
	}
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("request-timeout"))
	defer cancel()
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return requestError(c, "metadata", err)
	}
	if len(ids) == 0 {
		for _, b := range meta.Brokers {
			ids = append(ids, b.NodeID)
		}
	}
	slices.Sort(ids)
	req := kmsg.NewPtrDescribeLogDirsRequest()
	if topics := c.String("topic-list"); topics != "" {
		want := map[string]bool{}
		for _, t := range strings.Split(topics, ",") {
			want[strings.TrimSpace(t)] = true
		}
		for _, t := range meta.Topics {
			if t.Topic == nil || !want[*t.Topic] {
				continue
			}
			rt := kmsg.NewDescribeLogDirsRequestTopic()
			rt.Topic = *t.Topic
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, p.Partition)
			}
			req.Topics = append(req.Topics, rt)
		}
		if req.Topics == nil {
			req.Topics = []kmsg.DescribeLogDirsRequestTopic{} // none of them exist: ask for nothing
		}
	}
	doc := logDirsDoc{Version: 1, Brokers: []logDirsBroker{}}
	for _, id := range ids {
		resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
		if err != nil {
			return requestError(c, fmt.Sprintf("describe log dirs of broker %d", id), err)
		}
		if resp.ErrorCode != 0 {
			return fmt.Errorf("describe log dirs of broker %d: %s", id, kafkaExceptionClass(resp.ErrorCode))
		}
		b := logDirsBroker{Broker: id, LogDirs: []logDirJSON{}}
		for _, d := range resp.Dirs {
			ld := logDirJSON{LogDir: d.Dir, Partitions: []logDirPartition{}}
			if d.ErrorCode != 0 {
				e := kafkaExceptionClass(d.ErrorCode)
				ld.Error = &e
			}
			for _, t := range d.Topics {
				for _, p := range t.Partitions {
					ld.Partitions = append(ld.Partitions, logDirPartition{Partition: fmt.Sprintf("%s-%d", t.Topic, p.Partition), Size: p.Size, OffsetLag: p.OffsetLag, IsFuture: p.IsFuture})
				}
			}
			b.LogDirs = append(b.LogDirs, ld)
		}
		doc.Brokers = append(doc.Brokers, b)
	}
	fmt.Fprintf(c.App.Writer, "Querying brokers for log directories information\nReceived log directory information from brokers %s\n", joinIDs(ids))
	out, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.App.Writer, "%s\n", out)
	return err
}
