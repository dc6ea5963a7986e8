package config

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/magiconair/properties"
)

// base is a valid combined-mode node; tables change it with overrides.
const base = `process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:9093,2@127.0.0.1:9095,3@127.0.0.1:9097
listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093
controller.listener.names=CONTROLLER
log.dirs=data/a,data/b
`

func mustParse(t *testing.T, text string, overrides ...string) (*Config, []string) {
	t.Helper()
	cfg, warnings, err := Parse([]byte(text), overrides)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return cfg, warnings
}

func TestLoadKraftCombined(t *testing.T) {
	cfg, warnings, err := Load(filepath.Join("testdata", "kraft-combined.properties"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Voter{{1, "127.0.0.1", 19093}, {2, "127.0.0.1", 29093}, {3, "127.0.0.1", 39093}}
	if !reflect.DeepEqual(cfg.Voters, want) {
		t.Errorf("voters %v", cfg.Voters)
	}
	if cfg.NodeID != 1 || !cfg.Roles.Broker || !cfg.Roles.Controller {
		t.Errorf("node %d roles %v", cfg.NodeID, cfg.Roles)
	}
	if got := cfg.Listeners; len(got) != 2 || got[0].String() != "PLAINTEXT://127.0.0.1:19092" || got[1].String() != "CONTROLLER://127.0.0.1:19093" {
		t.Errorf("listeners %v", got)
	}
	if l, ok := cfg.ControllerListener(); !ok || l.Port != 19093 || l.SecurityProtocol != "PLAINTEXT" {
		t.Errorf("controller listener %v %v", l, ok)
	}
	if len(cfg.AdvertisedListeners) != 1 || cfg.AdvertisedListeners[0].Addr() != "127.0.0.1:19092" {
		t.Errorf("advertised %v", cfg.AdvertisedListeners)
	}
	if cfg.InterBrokerListenerName != "PLAINTEXT" || cfg.ListenerSecurityProtocolMap["SSL"] != "SSL" {
		t.Errorf("inter-broker %q map %v", cfg.InterBrokerListenerName, cfg.ListenerSecurityProtocolMap)
	}
	if !slices.Equal(cfg.LogDirs, []string{"data/n1"}) || cfg.MetadataLogDir != "data/n1" {
		t.Errorf("dirs %v %q", cfg.LogDirs, cfg.MetadataLogDir)
	}
	if cfg.NumPartitions != 3 || cfg.DefaultReplicationFactor != 3 || cfg.MinInsyncReplicas != 2 ||
		cfg.OffsetsTopicReplicationFactor != 3 || cfg.TransactionStateLogReplicationFactor != 3 ||
		cfg.TransactionStateLogMinISR != 2 {
		t.Errorf("topic defaults %+v", cfg)
	}
	if cfg.LogRetentionMs != 168*3_600_000 || cfg.LogSegmentBytes != 1<<30 || cfg.LogRetentionCheckInterval != 5*time.Minute {
		t.Errorf("retention %d segment %d check %v", cfg.LogRetentionMs, cfg.LogSegmentBytes, cfg.LogRetentionCheckInterval)
	}
	if cfg.SocketRequestMaxBytes != 104857600 || cfg.GroupInitialRebalanceDelay != 3*time.Second {
		t.Errorf("socket %d delay %v", cfg.SocketRequestMaxBytes, cfg.GroupInitialRebalanceDelay)
	}
	wantIgnored := []string{"num.network.threads", "num.io.threads", "socket.send.buffer.bytes", "socket.receive.buffer.bytes"}
	if len(warnings) != len(wantIgnored) {
		t.Fatalf("warnings %q", warnings)
	}
	for i, k := range wantIgnored {
		if !strings.HasPrefix(warnings[i], k+": a Kafka setting raftka does not use") {
			t.Errorf("warning %d = %q, want one for %s", i, warnings[i], k)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, _, err := Load(filepath.Join(t.TempDir(), "nope.properties"), nil)
	if err == nil || !strings.Contains(err.Error(), "nope.properties") {
		t.Fatalf("err %v", err)
	}
}

func TestLoadNamesFileInError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(path, []byte(base+"num.partitions=many\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := Load(path, nil)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `num.partitions="many"`) {
		t.Fatalf("err %v", err)
	}
}

func TestPropertiesSyntax(t *testing.T) {
	text := "! a bang comment\n" +
		"process.roles : broker,\\\n    controller\n" + // ':' separator and a continuation line
		"node.id 1\n" + // whitespace separator
		"controller.quorum.voters=1@127.0.0.1:9093\n" +
		"listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n" +
		"controller.listener.names=CONTROLLER\n" +
		"log.dirs=data/caf\\u00e9,data/a\\=b\n" + // unicode and separator escapes
		"broker.rack=${not.expanded}\n"
	cfg, _ := mustParse(t, text)
	if !cfg.Roles.Broker || !cfg.Roles.Controller || cfg.NodeID != 1 {
		t.Errorf("roles %v id %d", cfg.Roles, cfg.NodeID)
	}
	if !slices.Equal(cfg.LogDirs, []string{"data/café", "data/a=b"}) {
		t.Errorf("log dirs %q", cfg.LogDirs)
	}
	if cfg.Rack != "${not.expanded}" {
		t.Errorf("rack %q", cfg.Rack)
	}
}

func TestParseValue(t *testing.T) {
	cases := []struct {
		typ  Type
		text string
		want any // nil: an error
	}{
		{TypeInt, "42", int32(42)},
		{TypeInt, " -7 ", int32(-7)},
		{TypeInt, "2147483648", nil},
		{TypeInt, "1.5", nil},
		{TypeInt, "", nil},
		{TypeInt, "1_000", nil},
		{TypeLong, "9223372036854775807", int64(math.MaxInt64)},
		{TypeLong, "9223372036854775808", nil},
		{TypeDurationMs, "1500", int64(1500)},
		{TypeDurationMs, "1.5s", nil},
		{TypeBool, "TRUE", true},
		{TypeBool, "false", false},
		{TypeBool, "yes", nil},
		{TypeBool, "1", nil},
		{TypeString, "  x y  ", "x y"},
		{TypeClass, "org.example.A", "org.example.A"},
		{TypePassword, " secret ", " secret "},
		{TypeList, " a , b,,c ,", []string{"a", "b", "c"}},
		{TypeList, "", []string(nil)},
	}
	for _, c := range cases {
		def := &Def{Name: "k", Type: c.typ}
		got, err := parseValue(def, c.text)
		switch {
		case c.want == nil && err == nil:
			t.Errorf("%v %q: got %v, want an error", c.typ, c.text, got)
		case c.want == nil:
			if !strings.Contains(err.Error(), "k=") {
				t.Errorf("%v %q: error %q does not name the key", c.typ, c.text, err)
			}
		case err != nil:
			t.Errorf("%v %q: %v", c.typ, c.text, err)
		case !reflect.DeepEqual(got, c.want):
			t.Errorf("%v %q: got %#v, want %#v", c.typ, c.text, got, c.want)
		}
	}
}

func TestMalformedValues(t *testing.T) {
	cases := []struct {
		override string
		want     string // substring of the error
	}{
		{"node.id=one", `node.id="one": not a 32-bit integer`},
		{"node.id=-1", `node.id="-1": must be at least 0`},
		{"num.partitions=0", `num.partitions="0": must be at least 1`},
		{"default.replication.factor=40000", "must be between 1 and 32767"},
		{"auto.create.topics.enable=yes", `auto.create.topics.enable="yes": want true or false`},
		{"log.message.timestamp.type=createtime", "must be one of CreateTime, LogAppendTime"},
		{"process.roles=broker,zookeeper", `unknown role "zookeeper"`},
		{"process.roles=broker,broker", `role "broker" given twice`},
		{"process.roles=", "must name broker, controller or both"},
		{"metrics.listener=9100", "want host:port"},
		{"metrics.listener=:99999", "not a number from 0 to 65535"},
		{"log.segment.bytes=10", "must be at least 14"},
		{"authorizer.class.name=kafka.security.authorizer.AclAuthorizer", "raftka implements only Kafka's StandardAuthorizer"},
		{"security.inter.broker.protocol=TLS", "must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"},
		{"log.retention.ms=forever", `log.retention.ms="forever"`},
		{"raftka.follower.drop.behind.bytes=-1", "must be at least 0"},
	}
	for _, c := range cases {
		_, _, err := Parse([]byte(base), []string{c.override})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.override, err, c.want)
		}
	}
}

func TestCrossFieldRules(t *testing.T) {
	cases := []struct {
		name      string
		overrides []string
		want      string
	}{
		{"no node id", []string{"node.id="}, `node.id="": not a 32-bit integer`},
		{"controller not a voter", []string{"node.id=4"}, "node.id=4 is not among controller.quorum.voters"},
		{"no voters", []string{"controller.quorum.voters="}, "either controller.quorum.bootstrap.servers must contain"}, {"bootstrap servers not host:port", []string{"controller.quorum.voters=", "controller.quorum.bootstrap.servers=nohost"}, "controller.quorum.bootstrap.servers: \"nohost\" is not host:port"},
		{"bad voter", []string{"controller.quorum.voters=1@127.0.0.1"}, `voter "1@127.0.0.1"`},
		{"voter without @", []string{"controller.quorum.voters=127.0.0.1:9093"}, "want id@host:port"},
		{"voter twice", []string{"controller.quorum.voters=1@h:1,1@h:2"}, "voter id 1 is listed twice"},
		{"voter negative", []string{"controller.quorum.voters=-1@h:1"}, "not a non-negative"},
		{"no controller listener names", []string{"controller.listener.names="}, "controller.listener.names must be set"},
		{"controller listener missing", []string{"controller.listener.names=CTRL", "listener.security.protocol.map=CTRL:PLAINTEXT,PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"}, "listeners has none of controller.listener.names (CTRL)"},
		{"ssl listener without keystore", []string{"listeners=PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093"}, "listener SSL (SSL): a TLS listener needs a keystore"},
		{"sasl listener on Kafka's GSSAPI default", []string{"listeners=PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093"}, "GSSAPI is not supported"},
		{"inter-broker SASL with Kafka's GSSAPI default", []string{"listeners=SASL_SSL://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093", "inter.broker.listener.name=SASL_SSL", "ssl.keystore.location=k.p12", "sasl.enabled.mechanisms=PLAIN", "listener.name.sasl_ssl.plain.sasl.jaas.config=x"}, "sasl.mechanism.inter.broker.protocol=GSSAPI is not among"},
		{"inter-broker SASL without credentials", []string{"listeners=SASL_SSL://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093", "inter.broker.listener.name=SASL_SSL", "ssl.keystore.location=k.p12", "sasl.enabled.mechanisms=SCRAM-SHA-512", "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512"}, "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config's username and password"},
		{"controller over TLS without keystore", []string{"listener.security.protocol.map=CONTROLLER:SSL,PLAINTEXT:PLAINTEXT"}, "listener CONTROLLER (SSL): a TLS listener needs a keystore"},
		{"controller SASL with Kafka's GSSAPI default", []string{"listener.security.protocol.map=CONTROLLER:SASL_SSL,PLAINTEXT:PLAINTEXT", "ssl.keystore.location=k.p12", "sasl.enabled.mechanisms=SCRAM-SHA-512"}, "sasl.mechanism.controller.protocol=GSSAPI is not among"},
		{"controller SASL without credentials", []string{"listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT", "sasl.enabled.mechanisms=SCRAM-SHA-512", "sasl.mechanism.controller.protocol=SCRAM-SHA-512"}, "listener.name.controller.scram-sha-512.sasl.jaas.config's username and password"},
		{"unmapped listener", []string{"listeners=PLAINTEXT://127.0.0.1:9092,INTERNAL://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093"}, "listener INTERNAL has no security protocol"},
		{"listener without scheme", []string{"listeners=127.0.0.1:9092"}, "want NAME://host:port"},
		{"listener bad name", []string{"listeners=PLAIN TEXT://127.0.0.1:9092"}, "may hold letters"},
		{"listener twice", []string{"listeners=PLAINTEXT://127.0.0.1:9092,plaintext://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093"}, "listener name PLAINTEXT is used twice"},
		{"port twice", []string{"listeners=PLAINTEXT://127.0.0.1:9093,CONTROLLER://127.0.0.1:9093"}, "both use port 9093"},
		{"bad map entry", []string{"listener.security.protocol.map=PLAINTEXT"}, "want NAME:PROTOCOL"},
		{"bad map protocol", []string{"listener.security.protocol.map=PLAINTEXT:TLS"}, `unknown security protocol "TLS"`},
		{"advertise controller", []string{"advertised.listeners=PLAINTEXT://h:9092,CONTROLLER://h:9093"}, "CONTROLLER is a controller listener; brokers must not advertise it"},
		{"advertise unknown", []string{"advertised.listeners=EXTERNAL://h:9092", "listener.security.protocol.map=EXTERNAL:PLAINTEXT,PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"}, "EXTERNAL is not among listeners"},
		{"advertise 0.0.0.0", []string{"advertised.listeners=PLAINTEXT://0.0.0.0:9092"}, "non-routable address 0.0.0.0"},
		{"inter-broker on controller", []string{"inter.broker.listener.name=CONTROLLER"}, "is a controller listener"},
		{"inter-broker missing", []string{"inter.broker.listener.name=INTERNAL"}, "inter.broker.listener.name=INTERNAL is not among listeners"},
		{"inter-broker both", []string{"inter.broker.listener.name=PLAINTEXT", "security.inter.broker.protocol=PLAINTEXT"}, "must not both be set"},
		{"broker-only voter", []string{"process.roles=broker", "listeners=PLAINTEXT://127.0.0.1:9092"}, "broker-only node is not a voter"},
		{"broker-only two controller listeners", []string{"process.roles=broker", "node.id=7", "controller.listener.names=CONTROLLER,CTRL2",
			"listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093,CTRL2://127.0.0.1:9095", "listener.security.protocol.map=CTRL2:PLAINTEXT,PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"},
			"a broker-only node serves one controller listener"},
		{"controller-only plaintext", []string{"process.roles=controller"}, "PLAINTEXT is not in controller.listener.names"},
		{"no log dirs", []string{"log.dirs="}, "log.dirs (or log.dir) must be set"},
		{"log dir twice", []string{"log.dirs=a,b,a"}, "a is listed twice"},
		{"heartbeat vs session", []string{"broker.heartbeat.interval.ms=9000"}, "must be less than broker.session.timeout.ms"},
		{"group session bounds", []string{"group.min.session.timeout.ms=10000", "group.max.session.timeout.ms=5000"}, "must not exceed group.max.session.timeout.ms"},
		{"fetch wait vs lag", []string{"replica.fetch.wait.max.ms=40000"}, "must not exceed replica.lag.time.max.ms"},
		{"two errors at once", []string{"num.partitions=x", "node.id=y"}, `num.partitions="x"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Parse([]byte(base), c.overrides)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
	_, _, err := Parse([]byte(base), []string{"num.partitions=x", "node.id=y"})
	if !strings.Contains(err.Error(), `node.id="y"`) {
		t.Errorf("every malformed key is reported: %v", err)
	}
}

func TestMissingRequired(t *testing.T) {
	_, _, err := Parse([]byte("log.dirs=d\n"), nil)
	for _, want := range []string{"node.id must be set", "process.roles must be set", "either controller.quorum.bootstrap.servers must contain", "controller.listener.names must be set"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err %v, want %q", err, want)
		}
	}
}

func TestRoles(t *testing.T) {
	broker, _ := mustParse(t, base, "process.roles=broker", "node.id=7", "listeners=PLAINTEXT://127.0.0.1:9092")
	if !broker.Roles.Broker || broker.Roles.Controller || broker.Roles.String() != "broker" {
		t.Errorf("broker roles %v", broker.Roles)
	}
	if _, ok := broker.ControllerListener(); ok {
		t.Error("broker-only node has a controller listener")
	}
	ctrl, _ := mustParse(t, base, "process.roles=controller", "listeners=CONTROLLER://127.0.0.1:9093")
	if ctrl.Roles.Broker || !ctrl.Roles.Controller || ctrl.InterBrokerListenerName != "" || len(ctrl.AdvertisedListeners) != 0 {
		t.Errorf("controller-only %+v", ctrl)
	}
}

func TestListenerDefaults(t *testing.T) {
	// The default map names no CONTROLLER, so Kafka's rule maps it to PLAINTEXT.
	cfg, _ := mustParse(t, base)
	if cfg.ListenerSecurityProtocolMap["CONTROLLER"] != "PLAINTEXT" {
		t.Errorf("map %v", cfg.ListenerSecurityProtocolMap)
	}
	if len(cfg.AdvertisedListeners) != 1 || cfg.AdvertisedListeners[0].Name != "PLAINTEXT" {
		t.Errorf("advertised default %v", cfg.AdvertisedListeners)
	}
	if cfg.InterBrokerListenerName != "PLAINTEXT" {
		t.Errorf("inter-broker %q", cfg.InterBrokerListenerName)
	}
	// Names are case-insensitive; IPv6 and empty hosts parse.
	cfg, _ = mustParse(t, base, "listeners=plaintext://[::1]:9092,controller://:9093", "advertised.listeners=PLAINTEXT://broker1.example:19092")
	if cfg.Listeners[0].Host != "::1" || cfg.Listeners[0].Addr() != "[::1]:9092" || cfg.Listeners[1].Host != "" {
		t.Errorf("listeners %v", cfg.Listeners)
	}
	if cfg.AdvertisedListeners[0].String() != "PLAINTEXT://broker1.example:19092" || cfg.AdvertisedListeners[0].SecurityProtocol != "PLAINTEXT" {
		t.Errorf("advertised %v", cfg.AdvertisedListeners)
	}
	if !cfg.IsControllerListener("CONTROLLER") || cfg.IsControllerListener("PLAINTEXT") {
		t.Error("IsControllerListener")
	}
}

func TestDirs(t *testing.T) {
	cfg, _ := mustParse(t, base)
	if cfg.MetadataLogDir != "data/a" || !slices.Equal(cfg.AllDirs(), []string{"data/a", "data/b"}) {
		t.Errorf("metadata %q all %v", cfg.MetadataLogDir, cfg.AllDirs())
	}
	cfg, _ = mustParse(t, base, "metadata.log.dir=meta")
	if !slices.Equal(cfg.AllDirs(), []string{"data/a", "data/b", "meta"}) {
		t.Errorf("all %v", cfg.AllDirs())
	}
	cfg, _ = mustParse(t, base, "log.dirs=", "log.dir=single")
	if !slices.Equal(cfg.LogDirs, []string{"single"}) {
		t.Errorf("log.dir fallback %v", cfg.LogDirs)
	}
	cfg, _ = mustParse(t, base, "log.dir=ignored")
	if !slices.Equal(cfg.LogDirs, []string{"data/a", "data/b"}) {
		t.Errorf("log.dirs wins: %v", cfg.LogDirs)
	}
}

func TestRetentionAndRollPrecedence(t *testing.T) {
	cases := []struct {
		overrides      []string
		retention, rol int64
	}{
		{nil, 168 * 3_600_000, 168 * 3_600_000},
		{[]string{"log.retention.hours=1"}, 3_600_000, 168 * 3_600_000},
		{[]string{"log.retention.hours=1", "log.retention.minutes=2"}, 120_000, 168 * 3_600_000},
		{[]string{"log.retention.hours=1", "log.retention.minutes=2", "log.retention.ms=5"}, 5, 168 * 3_600_000},
		{[]string{"log.retention.ms=-5"}, -1, 168 * 3_600_000},
		{[]string{"log.retention.minutes=-1"}, -1, 168 * 3_600_000},
		{[]string{"log.roll.hours=2"}, 168 * 3_600_000, 7_200_000},
		{[]string{"log.roll.hours=2", "log.roll.ms=10"}, 168 * 3_600_000, 10},
	}
	for _, c := range cases {
		cfg, _ := mustParse(t, base, c.overrides...)
		if cfg.LogRetentionMs != c.retention || cfg.LogRollMs != c.rol {
			t.Errorf("%v: retention %d roll %d, want %d %d", c.overrides, cfg.LogRetentionMs, cfg.LogRollMs, c.retention, c.rol)
		}
	}
}

func TestFlushDefaults(t *testing.T) {
	cfg, _ := mustParse(t, base)
	if cfg.LogFlushIntervalMs != math.MaxInt64 || cfg.LogFlushIntervalMessages != math.MaxInt64 {
		t.Errorf("flush %d %d", cfg.LogFlushIntervalMs, cfg.LogFlushIntervalMessages)
	}
	cfg, _ = mustParse(t, base, "log.flush.scheduler.interval.ms=300")
	if cfg.LogFlushIntervalMs != 300 {
		t.Errorf("scheduler fallback %d", cfg.LogFlushIntervalMs)
	}
	cfg, _ = mustParse(t, base, "log.flush.scheduler.interval.ms=300", "log.flush.interval.ms=50", "log.flush.interval.messages=1")
	if cfg.LogFlushIntervalMs != 50 || cfg.LogFlushIntervalMessages != 1 {
		t.Errorf("flush %d %d", cfg.LogFlushIntervalMs, cfg.LogFlushIntervalMessages)
	}
}

func TestFollowerDropBehind(t *testing.T) {
	cfg, _ := mustParse(t, base)
	if cfg.FollowerDropBehind != 8<<20 {
		t.Errorf("default %d", cfg.FollowerDropBehind)
	}
	cfg, _ = mustParse(t, base, "raftka.follower.drop.behind.bytes=0")
	if cfg.FollowerDropBehind != 0 {
		t.Errorf("off: %d", cfg.FollowerDropBehind)
	}
}

func TestDurations(t *testing.T) {
	cfg, _ := mustParse(t, base, "broker.session.timeout.ms=1500", "broker.heartbeat.interval.ms=100",
		"leader.imbalance.check.interval.seconds=9223372036854775807", "connections.max.idle.ms=-1", "offsets.retention.minutes=2")
	if cfg.BrokerSessionTimeout != 1500*time.Millisecond || cfg.BrokerHeartbeatInterval != 100*time.Millisecond {
		t.Errorf("session %v heartbeat %v", cfg.BrokerSessionTimeout, cfg.BrokerHeartbeatInterval)
	}
	if cfg.LeaderImbalanceCheckInterval != math.MaxInt64 {
		t.Errorf("saturation: %v", cfg.LeaderImbalanceCheckInterval)
	}
	if cfg.ConnectionsMaxIdle != -time.Millisecond || cfg.OffsetsRetention != 2*time.Minute {
		t.Errorf("idle %v offsets %v", cfg.ConnectionsMaxIdle, cfg.OffsetsRetention)
	}
	for _, c := range []struct {
		ms   int64
		want time.Duration
	}{{0, 0}, {-1, -time.Millisecond}, {math.MaxInt64, math.MaxInt64}, {math.MinInt64, math.MinInt64}, {1000, time.Second}} {
		if got := msToDuration(c.ms); got != c.want {
			t.Errorf("msToDuration(%d) = %v", c.ms, got)
		}
	}
}

func TestMetricsListener(t *testing.T) {
	// Off by default: a fixed port would collide between nodes on one host.
	cfg, _ := mustParse(t, base)
	if cfg.MetricsListener != "" || cfg.MetricsPprofEnable {
		t.Errorf("default %q, pprof %v; want off", cfg.MetricsListener, cfg.MetricsPprofEnable)
	}
	cfg, _ = mustParse(t, base, "metrics.pprof.enable=true")
	if !cfg.MetricsPprofEnable {
		t.Error("metrics.pprof.enable=true not applied")
	}
	cfg, _ = mustParse(t, base, "metrics.listener=")
	if cfg.MetricsListener != "" {
		t.Errorf("disabled %q", cfg.MetricsListener)
	}
	cfg, _ = mustParse(t, base, "metrics.listener=127.0.0.1:19100")
	if cfg.MetricsListener != "127.0.0.1:19100" {
		t.Errorf("set %q", cfg.MetricsListener)
	}
}

func TestWarnings(t *testing.T) {
	_, warnings := mustParse(t, base, "num.io.threads=8", "listener.name.internal.ssl.keystore.location=x", "log.retension.hours=1", "frobnicate=1")
	want := []string{
		"num.io.threads: a Kafka setting raftka does not use; ignored",
		"log.retension.hours: unknown setting, not a Kafka broker or raftka key; ignored (did you mean log.retention.hours?)",
		"frobnicate: unknown setting, not a Kafka broker or raftka key; ignored",
		"listener.name.internal.ssl.keystore.location: no listener named INTERNAL; ignored",
	}
	if !slices.Equal(warnings, want) {
		t.Errorf("warnings\n%q\nwant\n%q", warnings, want)
	}
	_, warnings = mustParse(t, base, "controller.quorum.voters=1@127.0.0.1:9999")
	if len(warnings) != 1 || !strings.Contains(warnings[0], "other than its controller listener") {
		t.Errorf("voter port warning: %q", warnings)
	}
}

func TestOverrides(t *testing.T) {
	cfg, _ := mustParse(t, base, "num.partitions=4", "num.partitions= 6", "broker.rack=r1=x")
	if cfg.NumPartitions != 6 || cfg.Rack != "r1=x" {
		t.Errorf("partitions %d rack %q", cfg.NumPartitions, cfg.Rack)
	}
	for _, bad := range []string{"num.partitions", "=4", " =4"} {
		if _, _, err := Parse([]byte(base), []string{bad}); err == nil || !strings.Contains(err.Error(), "want key=value") {
			t.Errorf("override %q: err %v", bad, err)
		}
	}
}

func TestSettings(t *testing.T) {
	cfg, _ := mustParse(t, base, "num.partitions=4")
	byName := map[string]Setting{}
	for _, s := range cfg.Settings() {
		byName[s.Name] = s
	}
	if len(byName) != len(defs) {
		t.Fatalf("%d settings for %d defs", len(byName), len(defs))
	}
	checks := []struct {
		name   string
		value  string
		set    bool
		source Source
	}{
		{"num.partitions", "4", true, SourceOverride},
		{"node.id", "1", true, SourceFile},
		{"min.insync.replicas", "1", true, SourceDefault},
		{"log.retention.ms", "", false, SourceDefault},
	}
	for _, c := range checks {
		s := byName[c.name]
		if s.Value != c.value || s.Set != c.set || s.Source != c.source {
			t.Errorf("%s: %+v", c.name, s)
		}
	}
	if SourceOverride.String() != "override" || TypeDurationMs.String() != "duration-ms" {
		t.Error("String methods")
	}
}

func TestDefsTable(t *testing.T) {
	for _, d := range Defs() {
		if d.Doc == "" || d.Type == 0 {
			t.Errorf("%s: missing doc or type", d.Name)
		}
		// metrics.*, sasl.*, quota.*, group.consumer.* and group.share.* are
		// families raftka ignores by prefix except for the keys it defines
		// (build looks at defs first).
		if isKafkaIgnored(d.Name) && !strings.HasPrefix(d.Name, "metrics.") && !strings.HasPrefix(d.Name, "sasl.") && !strings.HasPrefix(d.Name, "quota.") && !strings.HasPrefix(d.Name, "group.consumer.") && !strings.HasPrefix(d.Name, "group.share.") {
			t.Errorf("%s is both in defs and ignored as a Kafka key", d.Name)
		}
		if kafkaIgnored[d.Name] {
			t.Errorf("%s is in defs and in kafkaIgnored", d.Name)
		}
		if !d.NoDefault {
			if _, err := parseValue(&d, d.Default); err != nil {
				t.Errorf("%s: default %q: %v", d.Name, d.Default, err)
			}
		}
	}
	if !slices.IsSortedFunc(Defs(), func(a, b Def) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("Defs not sorted")
	}
}

func TestEditDistance(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "abc", 0}, {"abc", "abd", 1}, {"abc", "ab", 1}, {"ab", "ba", 2}, {"abcdef", "x", 3},
	}
	for _, c := range cases {
		if got := editDistance(c.a, c.b, 3); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// FuzzParse holds that any input either fails with an error or gives a
// Config that survives a round trip through the settings it was given.
func FuzzParse(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join("testdata", "kraft-combined.properties"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed, "num.partitions=2")
	f.Add([]byte(base), "")
	f.Add([]byte(base+"log.dirs=a\\\n"), "x=")
	f.Add([]byte("\\u12"), "")
	f.Add([]byte(base[:40]), "node.id=")
	f.Add([]byte("a=${b}\nb=${a}\n"+base), "")
	f.Fuzz(func(t *testing.T, data []byte, override string) {
		var overrides []string
		if override != "" {
			overrides = []string{override}
		}
		cfg, _, err := Parse(data, overrides)
		if err != nil {
			return
		}
		p := properties.NewProperties()
		p.DisableExpansion = true
		for _, s := range cfg.Settings() {
			if s.Set && s.Source != SourceDefault {
				p.Set(s.Name, s.Value)
			}
		}
		var buf bytes.Buffer
		if _, err := p.Write(&buf, properties.UTF8); err != nil {
			t.Fatal(err)
		}
		again, _, err := Parse(buf.Bytes(), nil)
		if err != nil {
			t.Fatalf("settings of a valid config do not parse: %v\n%s", err, buf.String())
		}
		a, b := *cfg, *again
		a.settings, b.settings = nil, nil
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("round trip differs:\n%+v\n%+v", a, b)
		}
	})
}

func TestLogCleanerSettings(t *testing.T) {
	cfg, _ := mustParse(t, base)
	if !cfg.LogCleanerEnable || cfg.LogCleanerThreads != 1 || cfg.LogCleanerDedupeBufferSize != 128<<20 ||
		cfg.LogCleanerIOMaxBytesPerSecond != math.MaxFloat64 || cfg.LogCleanerBackoff != 15*time.Second || cfg.LogCleanerBusyIOBytesPerSecond != 80e6 {
		t.Fatalf("defaults: %+v", cfg)
	}
	if cfg, _ := mustParse(t, base, "raftka.log.cleaner.busy.io.max.bytes.per.second=0"); cfg.LogCleanerBusyIOBytesPerSecond != 0 {
		t.Fatalf("busy rate 0: %+v", cfg)
	}
	cfg, warnings := mustParse(t, base, "log.cleaner.enable=false", "log.cleaner.threads=3", "log.cleaner.dedupe.buffer.size=1048576",
		"log.cleaner.io.max.bytes.per.second=5e6", "log.cleaner.backoff.ms=100")
	if cfg.LogCleanerEnable || cfg.LogCleanerThreads != 3 || cfg.LogCleanerDedupeBufferSize != 1<<20 ||
		cfg.LogCleanerIOMaxBytesPerSecond != 5e6 || cfg.LogCleanerBackoff != 100*time.Millisecond {
		t.Fatalf("set: %+v", cfg)
	}
	if len(warnings) != 0 {
		t.Fatalf("applied cleaner keys warned: %v", warnings)
	}
	for _, bad := range []string{"log.cleaner.threads=0", "log.cleaner.io.max.bytes.per.second=-1", "log.cleaner.io.max.bytes.per.second=fast", "raftka.log.cleaner.busy.io.max.bytes.per.second=-1"} {
		if _, _, err := Parse([]byte(base+bad+"\n"), nil); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// listener.name.<l>.max.connection.creation.rate (KIP-612): kept for a
// listener Kafka clients use, warned about for an unknown listener or the
// controller listener, refused when not a rate.
func TestListenerMaxConnectionCreationRate(t *testing.T) {
	cfg, warnings := mustParse(t, base, "listener.name.plaintext.max.connection.creation.rate=5",
		"listener.name.nope.max.connection.creation.rate=1", "listener.name.controller.max.connection.creation.rate=1")
	if got := cfg.ListenerMaxConnectionCreationRate; len(got) != 1 || got["PLAINTEXT"] != 5 {
		t.Errorf("per-listener rates %v, want PLAINTEXT=5", got)
	}
	want := []string{
		"listener.name.controller.max.connection.creation.rate: the controller listener takes no connection creation limit in raftka; ignored",
		"listener.name.nope.max.connection.creation.rate: no listener named NOPE; ignored",
	}
	if !slices.Equal(warnings, want) {
		t.Errorf("warnings\n%q\nwant\n%q", warnings, want)
	}
	for _, bad := range []string{"-1", "fast", "1.5"} {
		if _, _, err := Parse([]byte(base), []string{"listener.name.plaintext.max.connection.creation.rate=" + bad}); err == nil {
			t.Errorf("listener.name.plaintext.max.connection.creation.rate=%s accepted", bad)
		}
	}
}
