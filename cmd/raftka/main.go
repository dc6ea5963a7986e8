package main

import (
	"fmt"
	"os"
	"sort"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"
)

// commands is filled by each subcommand file's init, so adding a subcommand
// touches only its own file.
var commands []*cli.Command

func register(c *cli.Command) { commands = append(commands, c) }

func newApp() *cli.App {
	sort.Slice(commands, func(i, j int) bool { return commands[i].Name < commands[j].Name })
	addCommandConfig(commands)
	return &cli.App{
		Name:     "raftka",
		Usage:    "a Kafka-compatible message broker with a Raft metadata quorum",
		Version:  version,
		Commands: commands,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "trace, debug, info, warn or error", EnvVars: []string{"RAFTKA_LOG_LEVEL"}},
			&cli.StringFlag{Name: "log-format", Value: "auto", Usage: "json, console, or auto (console on a terminal)", EnvVars: []string{"RAFTKA_LOG_FORMAT"}},
		},
		Before: func(c *cli.Context) error { return setupLogging(c.String("log-level"), c.String("log-format")) },
	}
}

func main() {
	if err := newApp().Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "raftka:", err)
		os.Exit(1)
	}
}

// logger is the process logger; subcommands derive from it.
var logger = zerolog.New(os.Stderr).With().Timestamp().Logger()
