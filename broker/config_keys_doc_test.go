package broker

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/metadata"
)

var updateConfigDoc = flag.Bool("update-config-doc", false, "rewrite CONFIG-KEYS.md from the config tables")

// CONFIG-KEYS.md lists the config keys raftka applies and Kafka's keys it
// does not, from the same tables the broker answers from. A key added to a
// table without regenerating the file fails here:
//
//	go test ./broker -run TestConfigKeysDoc -update-config-doc
func TestConfigKeysDoc(t *testing.T) {
	want := renderConfigKeysDoc()
	const path = "CONFIG-KEYS.md"
	if *updateConfigDoc {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("broker/%s is out of date with the config tables; regenerate it with\n\tgo test ./broker -run TestConfigKeysDoc -update-config-doc", path)
	}
}

func renderConfigKeysDoc() string {
	var b strings.Builder
	cell := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }
	code := func(s string) string {
		if s == "" {
			return `""`
		}
		return "`" + s + "`"
	}
	b.WriteString("# Configuration keys\n\n")
	b.WriteString("Generated from the tables the broker answers from (`go test ./broker -run TestConfigKeysDoc -update-config-doc`); do not edit by hand.\n\n")
	b.WriteString("## Broker keys raftka applies\n\n")
	var runtime []string
	for _, d := range metadata.DynamicBrokerConfigDefs() {
		runtime = append(runtime, "`"+d.Name+"`")
	}
	b.WriteString("Read from `server.properties` (and `--override`) by `broker/config`. DescribeConfigs shows them with their source; those that set topic config defaults, and " + strings.Join(runtime, ", ") + " (applied to the running node), can also be changed as dynamic broker configs, per broker or cluster-wide.\n\n")
	b.WriteString("| key | default | what it does |\n| --- | --- | --- |\n")
	for _, d := range config.Defs() {
		def := code(d.Default)
		if d.NoDefault {
			def = "(none)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", d.Name, cell(def), cell(d.Doc))
	}
	b.WriteString("\n## Listener security keys raftka applies\n\n")
	b.WriteString("TLS and SASL settings of SSL, SASL_PLAINTEXT and SASL_SSL listeners: a key given bare applies to every listener, `listener.name.<listener>.<key>` to one listener and wins over the bare key. SASL/PLAIN's users are the `user_<name>=\"<password>\"` options of `listener.name.<listener>.plain.sasl.jaas.config`; a broker's own login on a SASL inter-broker listener is the username and password of `listener.name.<listener>.<mechanism>.sasl.jaas.config`.\n\n")
	b.WriteString("| key | default | what it does |\n| --- | --- | --- |\n")
	for _, d := range config.SecurityKeyDefs() {
		def := "(none)"
		if d.Default != "" {
			def = code(d.Default)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", d.Name, cell(def), cell(d.Doc))
	}
	b.WriteString("\n## Topic configs raftka accepts\n\n")
	b.WriteString("Set at creation or by AlterConfigs / IncrementalAlterConfigs; a topic's value falls back to the broker keys listed, then to the default. The description says where raftka only accepts a key for compatibility.\n\n")
	b.WriteString("| key | default | broker keys | what it does |\n| --- | --- | --- | --- |\n")
	for _, d := range metadata.TopicConfigDefs() {
		var syn []string
		for _, s := range d.Brokers {
			syn = append(syn, "`"+s.Key+"`")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", d.Name, cell(code(d.Default)), strings.Join(syn, ", "), cell(d.Doc))
	}
	t := unappliedKafkaKeys()
	b.WriteString("\n## Kafka keys raftka does not apply\n\n")
	b.WriteString("Kafka 4.1 defines these; raftka does not act on them. In `server.properties` each costs a warning at start-up; DescribeConfigs answers each with Kafka's default, read-only; AlterConfigs and IncrementalAlterConfigs refuse them with INVALID_CONFIG.\n\n")
	fmt.Fprintf(&b, "Broker keys (%d): %s.\n\n", len(t.broker), codeList(sortedNames(t.broker)))
	fmt.Fprintf(&b, "Topic configs (%d): %s.\n", len(t.topic), codeList(sortedNames(t.topic)))
	return b.String()
}

func codeList(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "`" + n + "`"
	}
	return strings.Join(out, ", ")
}
