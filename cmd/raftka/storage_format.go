package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage"
	"github.com/urfave/cli/v2"
)

func init() {
	overrides := &overrideList{}
	scrams := &rawList{}
	register(&cli.Command{
		Name:  "storage",
		Usage: "prepare log directories (like kafka-storage.sh)",
		Subcommands: []*cli.Command{
			{
				Name:  "format",
				Usage: "write meta.properties with a cluster id into every log dir and the metadata dir",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Required: true, Usage: "the node's server.properties"},
					&cli.StringFlag{Name: "cluster-id", Aliases: []string{"t"}, Required: true, Usage: "the cluster id, the same on every node (make one with raftka storage random-uuid)"},
					&cli.BoolFlag{Name: "ignore-formatted", Aliases: []string{"g"}, Usage: "skip directories already formatted with the same cluster and node id"},
					&cli.GenericFlag{Name: "override", Value: overrides, Usage: "set a config key, as key=value (repeatable; commas stay in the value)"},
					&cli.BoolFlag{Name: "standalone", Aliases: []string{"s"}, Usage: "dynamic quorum (controller.quorum.bootstrap.servers): this controller alone is the first voter"},
					&cli.StringFlag{Name: "initial-controllers", Aliases: []string{"I"}, Usage: "dynamic quorum: the first voters, as id@host:port:directory-id,... (the same on each of them)"},
					&cli.BoolFlag{Name: "no-initial-controllers", Aliases: []string{"N"}, Usage: "dynamic quorum: this controller starts as an observer, to be added by raftka cluster add-controller"},
					&cli.GenericFlag{Name: "add-scram", Value: scrams, Usage: "a SCRAM user the new cluster starts with, as kafka-storage.sh takes it: 'SCRAM-SHA-256=[name=admin,password=...]' (repeatable)"},
				},
				Action: func(c *cli.Context) error {
					ov := overrides.take()
					cfg, warnings, err := config.Load(c.String("config"), ov)
					for _, w := range warnings {
						logger.Warn().Msg(w)
					}
					if err != nil {
						return err
					}
					var boot []metadata.Record
					for _, s := range scrams.take() {
						rec, err := parseAddScram(s)
						if err != nil {
							return err
						}
						boot = append(boot, rec)
					}
					q, err := planQuorumFormat(cfg, c.Bool("standalone"), c.String("initial-controllers"), c.Bool("no-initial-controllers"))
					if err != nil {
						return err
					}
					return formatDirs(c.App.Writer, cfg, c.String("cluster-id"), c.Bool("ignore-formatted"), boot, q)
				},
				// Flag values live as long as the command; clear them even
				// when the action did not run, for the next Run in this process.
				After: func(*cli.Context) error { overrides.take(); scrams.take(); return nil },
			},
			{
				Name:  "random-uuid",
				Usage: "print a new random cluster id",
				Action: func(c *cli.Context) error {
					fmt.Fprintln(c.App.Writer, storage.RandomUUID())
					return nil
				},
			},
		},
	})
}

// formatDirs checks every directory before writing any, so a refusal leaves
// nothing half-formatted.
func formatDirs(w io.Writer, cfg *config.Config, clusterID string, ignoreFormatted bool, boot []metadata.Record, q quorumFormat) error {
	if _, err := storage.ParseUUID(clusterID); err != nil {
		return fmt.Errorf("--cluster-id %q: %v (make one with raftka storage random-uuid)", clusterID, err)
	}
	var todo []string
	for _, dir := range cfg.AllDirs() {
		m, err := storage.ReadMetaProperties(dir)
		switch {
		case errors.Is(err, storage.ErrNotFormatted):
			todo = append(todo, dir)
		case err != nil:
			return err
		case m.ClusterID != clusterID || m.NodeID != cfg.NodeID:
			return fmt.Errorf("%s is already formatted for cluster.id %s, node.id %d; refusing to format it for cluster.id %s, node.id %d", dir, m.ClusterID, m.NodeID, clusterID, cfg.NodeID)
		case !ignoreFormatted:
			return fmt.Errorf("%s is already formatted; use --ignore-formatted to skip formatted directories and format the others", dir)
		default:
			fmt.Fprintf(w, "Skipping %s: already formatted for cluster.id %s, node.id %d\n", dir, m.ClusterID, m.NodeID)
		}
	}
	if len(boot) > 0 && !slices.Contains(todo, cfg.MetadataLogDir) {
		return fmt.Errorf("--add-scram: the metadata log dir %s is already formatted; bootstrap records apply only to a new cluster", cfg.MetadataLogDir)
	}
	if q.voters != nil && !slices.Contains(todo, cfg.MetadataLogDir) {
		return fmt.Errorf("--standalone / --initial-controllers: the metadata log dir %s is already formatted; the first voters apply only to a new cluster", cfg.MetadataLogDir)
	}
	scram := len(boot)
	if q.voters != nil {
		boot = append(boot, &metadata.FeatureLevel{Name: metadata.KRaftVersionFeature, Level: 1})
		for _, v := range q.voters {
			u, err := storage.ParseUUID(v.DirectoryID)
			if err != nil {
				return err
			}
			boot = append(boot, &metadata.VoterDirectory{NodeID: v.ID, DirectoryID: u})
		}
	}
	if len(todo) == 0 {
		fmt.Fprintln(w, "All of the log directories are already formatted.")
		return nil
	}
	if len(boot) > 0 {
		// Before meta.properties: a formatted metadata dir always has them.
		if err := writeBootstrap(cfg.MetadataLogDir, boot); err != nil {
			return fmt.Errorf("writing the bootstrap records: %w", err)
		}
		if scram > 0 {
			fmt.Fprintf(w, "Wrote %d SCRAM credential(s) to %s for the first controller to commit\n", scram, filepath.Join(cfg.MetadataLogDir, bootstrapFile))
		}
	}
	if q.voters != nil {
		if err := writeVoters(cfg.MetadataLogDir, q.voters); err != nil {
			return fmt.Errorf("writing the initial voters: %w", err)
		}
		fmt.Fprintf(w, "Wrote the initial voters %v to %s (kraft.version 1)\n", q.voters, filepath.Join(cfg.MetadataLogDir, votersFile))
	}
	for _, dir := range todo {
		m := storage.MetaProperties{ClusterID: clusterID, NodeID: cfg.NodeID, DirectoryID: storage.RandomUUID().String()}
		if dir == cfg.MetadataLogDir && q.dirID != "" {
			m.DirectoryID = q.dirID
		}
		if err := storage.WriteMetaProperties(dir, m); err != nil {
			return fmt.Errorf("formatting %s: %w", dir, err)
		}
		fmt.Fprintf(w, "Formatted %s with cluster.id %s, node.id %d\n", dir, clusterID, cfg.NodeID)
	}
	return nil
}

// rawList is a repeatable flag whose values are kept whole. (No short
// alias: cli copies a flag's String() between its names, which would join
// the values.)
type rawList struct{ items []string }

func (o *rawList) Set(v string) error { o.items = append(o.items, v); return nil }
func (o *rawList) String() string     { return strings.Join(o.items, " ") }

func (o *rawList) take() []string {
	items := o.items
	o.items = nil
	return items
}

// overrideList is a repeatable --override key=value flag. cli's string
// slice flags split on commas, which would cut values such as
// listeners=PLAINTEXT://...,CONTROLLER://... apart.
type overrideList struct{ items []string }

func (o *overrideList) Set(v string) error {
	if k, _, ok := strings.Cut(v, "="); !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("want key=value, got %q", v)
	}
	o.items = append(o.items, v)
	return nil
}

func (o *overrideList) String() string { return strings.Join(o.items, " ") }

// take returns the values given and empties the list.
func (o *overrideList) take() []string {
	items := o.items
	o.items = nil
	return items
}
