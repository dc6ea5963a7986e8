package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

func TestProduceConsumeRoundTrip(t *testing.T) {
	bs := startKfake(t, kfake.SeedTopics(1, "lines"))
	var in, want strings.Builder
	for i := range 100 {
		fmt.Fprintf(&in, "key-%d:value %d, with a comma\n", i, i)
		fmt.Fprintf(&want, "Partition:0\tOffset:%d\tsource:cli test,tag:a=b\tkey-%d\tvalue %d, with a comma\n", i, i, i)
	}
	mustRun(t, in.String(), "produce", "--bootstrap-server", bs, "--topic", "lines", "--key-separator", ":",
		"--header", "source=cli test", "--header", "tag=a=b", "--compression", "zstd", "--linger", "0s")
	out, errOut, err := runCLI(t, "", "consume", "--bootstrap-server", bs, "--topic", "lines", "--from-beginning", "--max-messages", "100",
		"--print-partition", "--print-offset", "--print-headers", "--print-key")
	if err != nil {
		t.Fatal(err)
	}
	if out != want.String() {
		t.Fatalf("consumed:\n%s\nwant:\n%s", out, want.String())
	}
	if errOut != "Processed a total of 100 messages\n" {
		t.Fatalf("stderr %q", errOut)
	}

	// Timestamps, a custom separator, and a numeric start offset.
	out = mustRun(t, "", "consume", "--bootstrap-server", bs, "--topic", "lines", "--partition", "0", "--offset", "98", "--max-messages", "2",
		"--print-timestamp", "--separator", " | ")
	if !regexp.MustCompile(`^CreateTime:\d{13} \| value 98, with a comma\nCreateTime:\d{13} \| value 99, with a comma\n$`).MatchString(out) {
		t.Fatalf("consume with timestamps printed %q", out)
	}
}

func TestProduceWithoutKeysAndToPartition(t *testing.T) {
	bs := startKfake(t, kfake.SeedTopics(3, "spread"))
	mustRun(t, "first\r\n\nlast without newline", "produce", "--bootstrap-server", bs, "--topic", "spread", "--partition", "2", "--acks", "1")
	out := mustRun(t, "", "consume", "--bootstrap-server", bs, "--topic", "spread", "--partition", "2", "--offset", "earliest",
		"--max-messages", "3", "--print-key", "--print-headers")
	if want := "NO_HEADERS\tnull\tfirst\nNO_HEADERS\tnull\t\nNO_HEADERS\tnull\tlast without newline\n"; out != want {
		t.Fatalf("consumed %q, want %q", out, want)
	}
	// A line without the separator stops the producer with the line number.
	_, _, err := runCLI(t, "a\tb\nno separator\n", "produce", "--bootstrap-server", bs, "--topic", "spread", "--parse-key")
	if err == nil || !strings.Contains(err.Error(), "line 2: no key separator") {
		t.Fatalf("produce without separator: %v", err)
	}
}

func TestProduceFailureExitsNonZero(t *testing.T) {
	bs := startKfake(t, kfake.SeedTopics(1, "small"))
	// Partition 5 does not exist: every record fails, and the command says so.
	_, _, err := runCLI(t, "x\ny\n", "produce", "--bootstrap-server", bs, "--topic", "small", "--partition", "5", "--delivery-timeout", "2s")
	if err == nil || !strings.Contains(err.Error(), "2 of 2 records failed") {
		t.Fatalf("produce to a missing partition: %v", err)
	}
}

func TestProduceFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"produce"}, "--topic is required"},
		{[]string{"produce", "--topic", "t", "--acks", "2"}, `--acks "2": want all, -1, 1 or 0`},
		{[]string{"produce", "--topic", "t", "--compression", "brotli"}, `--compression "brotli"`},
		{[]string{"produce", "--topic", "t", "--header", "nokey"}, "want key=value"},
		{[]string{"produce", "--topic", "t", "--key-separator", ""}, "--key-separator must not be empty"},
		{[]string{"consume"}, "--topic is required"},
		{[]string{"consume", "--topic", "t", "--group", "g", "--offset", "5"}, "--offset cannot be used with --group"},
		{[]string{"consume", "--topic", "t", "--offset", "5"}, "needs --partition"},
		{[]string{"consume", "--topic", "t", "--offset", "soon"}, `--offset "soon"`},
		{[]string{"consume", "--topic", "t", "--isolation-level", "dirty"}, "--isolation-level"},
	} {
		_, _, err := runCLI(t, "", tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}
