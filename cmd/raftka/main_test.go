package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestVersionCommand(t *testing.T) {
	app := newApp()
	var out bytes.Buffer
	app.Writer = &out
	if err := app.Run([]string{"raftka", "version"}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "raftka ") {
		t.Fatalf("version output %q", out.String())
	}
}

func TestBadLogLevel(t *testing.T) {
	app := newApp()
	app.Writer = &bytes.Buffer{}
	if err := app.Run([]string{"raftka", "--log-level", "loud", "version"}); err == nil {
		t.Fatal("want an error for --log-level loud")
	}
}
