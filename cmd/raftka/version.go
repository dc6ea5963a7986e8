package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/urfave/cli/v2"
)

// version is set at build time with -ldflags "-X main.version=..."; a plain
// go build reports the module version or "dev".
var version = "dev"

func init() {
	if version == "dev" {
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version
		}
	}
	register(&cli.Command{
		Name:  "version",
		Usage: "print the raftka version",
		Action: func(c *cli.Context) error {
			fmt.Fprintf(c.App.Writer, "raftka %s (%s %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	})
}
