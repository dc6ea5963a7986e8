package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/urfave/cli/v2"
)

// benchKfakeCommand runs franz-go's kfake, an in-memory Kafka written in Go,
// as the peer raftka's benchmark figures are compared with. It is not a
// broker to use for anything else.
func benchKfakeCommand() *cli.Command {
	return &cli.Command{
		Name:  "kfake",
		Usage: "run franz-go's kfake broker in the foreground as a benchmark peer only (not for real use)",
		Description: "Starts one in-process kfake broker (github.com/twmb/franz-go/pkg/kfake), the reference\n" +
			"that test/bench.sh compares raftka with, and blocks until SIGINT or SIGTERM. kfake keeps\n" +
			"its data in memory (with --data-dir it also persists there) and has no replication; it\n" +
			"exists here only so raftka's numbers have a peer measured on the same machine.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:9092", Usage: "127.0.0.1:PORT to listen on (kfake binds loopback only; port 0 picks one)"},
			&cli.StringFlag{Name: "data-dir", Usage: "directory kfake persists its data in (default: memory only)"},
			&cli.IntFlag{Name: "partitions", Value: 6, Usage: "partitions of an auto-created topic"},
		},
		Action: func(c *cli.Context) error {
			host, portStr, err := net.SplitHostPort(c.String("listen"))
			if err != nil {
				return fmt.Errorf("bench kfake: --listen %q: %v", c.String("listen"), err)
			}
			port, err := strconv.Atoi(portStr)
			if err != nil || port < 0 || port > 65535 {
				return fmt.Errorf("bench kfake: --listen %q: bad port", c.String("listen"))
			}
			if host != "127.0.0.1" && host != "localhost" {
				return fmt.Errorf("bench kfake: --listen %q: kfake listens on 127.0.0.1 only", c.String("listen"))
			}
			opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(port), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(c.Int("partitions"))}
			if d := c.String("data-dir"); d != "" {
				opts = append(opts, kfake.DataDir(d))
			}
			cluster, err := kfake.NewCluster(opts...)
			if err != nil {
				return fmt.Errorf("bench kfake: %w", err)
			}
			defer cluster.Close()
			ctx, stop := signalContext(c.Context)
			defer stop()
			fmt.Fprintf(c.App.Writer, "kfake listening on %s\n", strings.Join(cluster.ListenAddrs(), ","))
			<-ctx.Done()
			return nil
		},
	}
}
