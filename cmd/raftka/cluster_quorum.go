package main

// `raftka cluster add-controller` and `remove-controller`: the dynamic
// controller quorum's changes (KIP-853), as kafka-metadata-quorum.sh's
// add-controller and remove-controller send them: AddRaftVoter and
// RemoveRaftVoter to any broker, which forwards them to the active
// controller. add-controller reads the new controller's own
// server.properties (node.id, its controller listener) and the
// directory.id of its formatted metadata log dir, as Kafka's reads the
// file given with --command-config; raftka's --command-config is the
// client's security file, so that one is --controller-config.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/storage"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

// quorumCommands are cluster's add-controller and remove-controller.
func quorumCommands() []*cli.Command {
	flags := func(extra ...cli.Flag) []cli.Flag {
		return append([]cli.Flag{bootstrapFlag(), &cli.DurationFlag{Name: "request-timeout", Value: 60 * time.Second, Usage: "how long to wait for the change (an added controller must first catch up with the metadata log)"}}, extra...)
	}
	return []*cli.Command{
		describeCommand(),
		{
			Name:   "add-controller",
			Usage:  "add a controller formatted with --no-initial-controllers (and running) to the dynamic quorum as a voter, as kafka-metadata-quorum.sh add-controller",
			Flags:  flags(&cli.StringFlag{Name: "controller-config", Required: true, Usage: "the new controller's server.properties (node.id, its controller listener, its metadata log dir)"}),
			Action: clusterAddController,
		},
		{
			Name:  "remove-controller",
			Usage: "remove a voter from the dynamic quorum, as kafka-metadata-quorum.sh remove-controller (a running one stays an observer)",
			Flags: flags(
				&cli.IntFlag{Name: "controller-id", Value: -1, Usage: "the voter's node id"},
				&cli.StringFlag{Name: "controller-directory-id", Usage: "the voter's metadata log directory.id (KIP-858), as Kafka takes it; raftka's voters are named by node id"},
			),
			Action: clusterRemoveController,
		},
	}
}

func clusterAddController(c *cli.Context) error {
	cfg, warnings, err := config.Load(c.String("controller-config"), nil)
	for _, w := range warnings {
		logger.Warn().Msg(w)
	}
	if err != nil {
		return err
	}
	if !cfg.Roles.Controller {
		return fmt.Errorf("add-controller: %s has process.roles without controller", c.String("controller-config"))
	}
	l, ok := cfg.ControllerListener()
	if !ok {
		return errors.New("add-controller: the controller config has no controller listener")
	}
	m, err := storage.ReadMetaProperties(cfg.MetadataLogDir)
	if err != nil {
		return fmt.Errorf("add-controller: %w (format the new controller with raftka storage format --no-initial-controllers first)", err)
	}
	req := kmsg.NewPtrAddRaftVoterRequest()
	req.ClusterID = kmsg.StringPtr(m.ClusterID)
	req.VoterID = cfg.NodeID
	req.TimeoutMillis = int32(c.Duration("request-timeout").Milliseconds())
	req.AckWhenCommitted = true
	if m.DirectoryID != "" {
		if u, err := storage.ParseUUID(m.DirectoryID); err == nil {
			req.VoterDirectoryID = u
		}
	}
	rl := kmsg.NewAddRaftVoterRequestListener()
	rl.Name, rl.Host, rl.Port = l.Name, l.Host, uint16(l.Port)
	req.Listeners = append(req.Listeners, rl)

	cl, err := newClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("request-timeout")+5*time.Second)
	defer cancel()
	start := time.Now()
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = responseError(resp.ErrorCode, resp.ErrorMessage)
	}
	if err != nil {
		return requestError(c, fmt.Sprintf("add controller %d", cfg.NodeID), err)
	}
	_, err = fmt.Fprintf(c.App.Writer, "Added controller %d with directory id %s and endpoints: %s (caught up and voting after %s)\n",
		cfg.NodeID, m.DirectoryID, l, time.Since(start).Round(time.Millisecond))
	return err
}

func clusterRemoveController(c *cli.Context) error {
	id := c.Int("controller-id")
	if id < 0 {
		return errors.New("remove-controller: --controller-id N is required")
	}
	req := kmsg.NewPtrRemoveRaftVoterRequest()
	req.VoterID = int32(id)
	if d := c.String("controller-directory-id"); d != "" {
		u, err := storage.ParseUUID(d)
		if err != nil {
			return fmt.Errorf("remove-controller: --controller-directory-id %q: %v", d, err)
		}
		req.VoterDirectoryID = u
	}
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("request-timeout"))
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = responseError(resp.ErrorCode, resp.ErrorMessage)
	}
	if err != nil {
		return requestError(c, fmt.Sprintf("remove controller %d", id), err)
	}
	_, err = fmt.Fprintf(c.App.Writer, "Removed controller %d from the quorum.\n", id)
	return err
}
