package main

import (
	"fmt"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

func setupLogging(level, format string) error {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return fmt.Errorf("--log-level %q: want trace, debug, info, warn or error", level)
	}
	var console bool
	switch format {
	case "json":
	case "console":
		console = true
	case "auto":
		console = isatty.IsTerminal(os.Stderr.Fd())
	default:
		return fmt.Errorf("--log-format %q: want json, console or auto", format)
	}
	if console {
		logger = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: time.TimeOnly}).With().Timestamp().Logger()
	} else {
		logger = zerolog.New(os.Stderr).With().Timestamp().Logger()
	}
	logger = logger.Level(lvl)
	return nil
}
