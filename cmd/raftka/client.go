package main

// Shared pieces of the client-side commands (topics, produce, consume,
// leader-election, bench, acls): the --bootstrap-server and --command-config
// flags, the kgo client, Kafka
// error formatting, and the flag parsers they have in common. Nothing here
// knows about raftka's server; every command speaks the plain Kafka protocol
// and works against any broker.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/magiconair/properties"
	"github.com/raftka/raftka/broker"
	"github.com/raftka/raftka/broker/config"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/urfave/cli/v2"
)

const defaultBootstrap = "localhost:9092"

func bootstrapFlag() cli.Flag {
	return &cli.StringFlag{Name: "bootstrap-server", Value: defaultBootstrap, Usage: "HOST:PORT[,HOST:PORT...] of brokers to connect to first", EnvVars: []string{"RAFTKA_BOOTSTRAP_SERVER"}}
}

func requestTimeoutFlag() cli.Flag {
	return &cli.DurationFlag{Name: "request-timeout", Value: 30 * time.Second, Usage: "give up on the cluster after this long"}
}

// seedBrokers splits --bootstrap-server; an empty entry is a typo worth
// reporting rather than a dial to ":0".
func seedBrokers(s string) ([]string, error) {
	var out []string
	for _, hp := range strings.Split(s, ",") {
		hp = strings.TrimSpace(hp)
		if hp == "" {
			return nil, fmt.Errorf("--bootstrap-server %q: empty HOST:PORT", s)
		}
		if _, port, ok := strings.Cut(hp, ":"); !ok || port == "" {
			return nil, fmt.Errorf("--bootstrap-server %q: %q is not HOST:PORT", s, hp)
		}
		out = append(out, hp)
	}
	return out, nil
}

// bootstrapControllerFlag is Kafka's tools' --bootstrap-controller
// (KIP-919): talk to the controllers' listener instead of the brokers.
func bootstrapControllerFlag() cli.Flag {
	return &cli.StringFlag{Name: "bootstrap-controller", Usage: "HOST:PORT[,HOST:PORT...] of controllers (their controller listener) to send the request to instead of a broker, as Kafka's --bootstrap-controller"}
}

// bootstrapController is the command's --bootstrap-controller ("" for
// none), looked up through the parent commands' contexts too.
func bootstrapController(c *cli.Context) string {
	for _, x := range c.Lineage() {
		if x.IsSet("bootstrap-controller") {
			return x.String("bootstrap-controller")
		}
	}
	return ""
}

// newClient builds a kgo client for the command's --bootstrap-server (or
// --bootstrap-controller), with kgo's own log routed into the process
// logger.
func newClient(c *cli.Context, opts ...kgo.Opt) (*kgo.Client, error) {
	bootstrap := c.String("bootstrap-server")
	if ctrl := bootstrapController(c); ctrl != "" {
		if c.IsSet("bootstrap-server") {
			return nil, errors.New("--bootstrap-server and --bootstrap-controller: give only one")
		}
		bootstrap = ctrl
	}
	seeds, err := seedBrokers(bootstrap)
	if err != nil {
		return nil, err
	}
	base := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.WithLogger(kgoLogger{l: logger}),
		kgo.ClientID("raftka-cli"),
	}
	if path := commandConfigPath(c); path != "" {
		login, err := commandConfigLogin(path)
		if err != nil {
			return nil, err
		}
		if dial := login.Dial; dial != nil {
			base = append(base, kgo.Dialer(func(ctx context.Context, _, host string) (net.Conn, error) { return dial(ctx, host) }))
		}
		if login.SASL != nil {
			// kgo runs the exchange, so that it re-authenticates its
			// pipelined connections in place before the session lifetime
			// the broker gives ends (KIP-368) instead of being cut off.
			base = append(base, kgo.SASL(kgoSASL{login.SASL}))
		}
	}
	return kgo.NewClient(append(base, opts...)...)
}

// kgoSASL is raftka's client login as a franz-go SASL mechanism.
type kgoSASL struct{ s *broker.ClientSASL }

func (m kgoSASL) Name() string { return m.s.Mechanism() }

func (m kgoSASL) Authenticate(context.Context, string) (sasl.Session, []byte, error) {
	first, step, err := m.s.Start(time.Now())
	if err != nil {
		return nil, nil, err
	}
	return kgoSASLSession(step), first, nil
}

type kgoSASLSession func([]byte) (bool, []byte, error)

func (f kgoSASLSession) Challenge(in []byte) (bool, []byte, error) { return f(in) }

// commandConfigLogin reads a --command-config file into the connection
// settings of a kgo client.
func commandConfigLogin(path string) (*broker.ClientLogin, error) {
	cs, err := commandConfigSecurity(path)
	if err != nil {
		return nil, err
	}
	login, err := broker.NewClientLogin(cs, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("--command-config %s: %w", path, err)
	}
	return login, nil
}

// commandConfigFlag is Kafka's tools' --command-config: a properties file
// of client keys (security.protocol, sasl.mechanism, sasl.jaas.config,
// ssl.truststore.*, ssl.keystore.* ...). newApp gives it to every command
// that has --bootstrap-server.
func commandConfigFlag() cli.Flag {
	return &cli.StringFlag{Name: "command-config", Usage: "client properties file (security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.location, ...), as Kafka's tools take"}
}

// commandConfigPath is the command's --command-config, looked up through
// the parent commands' contexts too.
func commandConfigPath(c *cli.Context) string {
	for _, x := range c.Lineage() {
		if x.IsSet("command-config") {
			return x.String("command-config")
		}
	}
	return ""
}

// commandConfigDialer reads a --command-config file into the dialer that
// secures each connection (nil for PLAINTEXT). Keys raftka does not apply
// are warned about, once each.
func commandConfigDialer(path string) (func(ctx context.Context, addr string) (net.Conn, error), error) {
	cs, err := commandConfigSecurity(path)
	if err != nil {
		return nil, err
	}
	dial, err := broker.ClientDialer(cs, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("--command-config %s: %w", path, err)
	}
	return dial, nil
}

// describeNotOnControllers refuses --bootstrap-controller for a request
// Kafka's controllers do not serve (ControllerApis has the Alter side of
// client quotas and SCRAM credentials, not the Describe side), before a
// request is sent: a controller would answer UNSUPPORTED_VERSION, which
// says less.
func describeNotOnControllers(c *cli.Context, api string) error {
	if bootstrapController(c) == "" {
		return nil
	}
	return fmt.Errorf("%s: controllers do not serve %s (as in Kafka); use --bootstrap-server", c.Command.FullName(), api)
}

// requestor is where a command sends its requests: the kgo client, which
// routes each request as for brokers, or, with --bootstrap-controller,
// the controllers given, in turn until one answers. A controller forwards
// what only the active one can do, so any of them will do; controllers do
// not serve Metadata, so kgo could not route there itself.
func requestor(c *cli.Context, cl *kgo.Client) kmsg.Requestor {
	if bootstrapController(c) == "" {
		return cl
	}
	return controllerRequestor{cl}
}

type controllerRequestor struct{ cl *kgo.Client }

func (r controllerRequestor) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	err := errors.New("no controller given")
	for _, b := range r.cl.SeedBrokers() {
		var resp kmsg.Response
		if resp, err = b.RetriableRequest(ctx, req); err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, err
}

// commandConfigSecurity parses a --command-config file; keys raftka does
// not apply are warned about, once each.
func commandConfigSecurity(path string) (*config.ClientSecurity, error) {
	p, err := properties.LoadFile(path, properties.UTF8)
	if err != nil {
		return nil, fmt.Errorf("--command-config: %w", err)
	}
	cs, warnings, err := config.ParseClientSecurity(p.Map())
	if err != nil {
		return nil, fmt.Errorf("--command-config %s: %w", path, err)
	}
	for _, w := range warnings {
		logger.Warn().Str("file", path).Msg(w)
	}
	return cs, nil
}

// addCommandConfig gives --command-config to every command (and
// subcommand) that has --bootstrap-server.
func addCommandConfig(cmds []*cli.Command) {
	for _, cmd := range cmds {
		addCommandConfig(cmd.Subcommands)
		has, already := false, false
		for _, f := range cmd.Flags {
			for _, n := range f.Names() {
				has = has || n == "bootstrap-server"
				already = already || n == "command-config"
			}
		}
		if has && !already {
			cmd.Flags = append(cmd.Flags, commandConfigFlag())
		}
	}
}

// kgoLogger adapts kgo's logger to zerolog. kgo is chatty at info, so its
// messages are demoted one level: a user who asks for debug sees them. It
// keeps its own copy of the logger because kgo may log from goroutines that
// outlive the command.
type kgoLogger struct{ l zerolog.Logger }

func (k kgoLogger) Level() kgo.LogLevel {
	switch l := k.l.GetLevel(); {
	case l <= zerolog.TraceLevel:
		return kgo.LogLevelDebug
	case l <= zerolog.DebugLevel:
		return kgo.LogLevelInfo
	case l <= zerolog.WarnLevel:
		return kgo.LogLevelWarn
	default:
		return kgo.LogLevelError
	}
}

func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	var ev *zerolog.Event
	switch level {
	case kgo.LogLevelError:
		ev = k.l.Error()
	case kgo.LogLevelWarn:
		ev = k.l.Warn()
	case kgo.LogLevelInfo:
		ev = k.l.Debug()
	default:
		ev = k.l.Trace()
	}
	for i := 0; i+1 < len(keyvals); i += 2 {
		ev = ev.Interface(fmt.Sprint(keyvals[i]), keyvals[i+1])
	}
	ev.Str("component", "kgo").Msg(msg)
}

// kafkaError is a Kafka error code from a response, shown the way operators
// search for it: the protocol name, then the broker's message (or kerr's
// description when the broker sent none).
type kafkaError struct {
	Code    int16
	Name    string
	Message string
}

func (e *kafkaError) Error() string { return e.Name + ": " + e.Message }

// Unwrap lets callers compare with kerr's sentinels (errors.Is(err, kerr.TopicAlreadyExists)).
func (e *kafkaError) Unwrap() error { return kerr.ErrorForCode(e.Code) }

// responseError returns nil for code 0.
func responseError(code int16, msg *string) error {
	if code == 0 {
		return nil
	}
	e := &kafkaError{Code: code, Name: fmt.Sprintf("UNKNOWN_ERROR_CODE_%d", code)}
	var ke *kerr.Error
	if errors.As(kerr.ErrorForCode(code), &ke) && ke.Code == code {
		e.Name, e.Message = ke.Message, ke.Description
	}
	if msg != nil && *msg != "" {
		e.Message = *msg
	}
	return e
}

// requestError explains a failed round trip: a deadline usually means
// nothing answered at --bootstrap-server.
func requestError(c *cli.Context, what string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: no answer from %s within %s (is a broker running there?)", what, c.String("bootstrap-server"), c.Duration("request-timeout"))
	}
	return fmt.Errorf("%s: %w", what, err)
}

// parseAcks accepts Kafka's acks values: all or -1, 1, 0.
func parseAcks(s string) (kgo.Acks, bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "all", "-1":
		return kgo.AllISRAcks(), true, nil
	case "1":
		return kgo.LeaderAck(), false, nil
	case "0":
		return kgo.NoAck(), false, nil
	}
	return kgo.Acks{}, false, fmt.Errorf("--acks %q: want all, -1, 1 or 0", s)
}

// parseCompression accepts Kafka's compression.type names.
func parseCompression(s string) (kgo.CompressionCodec, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("--compression %q: want none, gzip, snappy, lz4 or zstd", s)
}

// unescape turns the backslash escapes a shell user types ('\t', '\n') into
// the characters, so --key-separator '\t' works as in Kafka's properties
// files. Text that is not a valid escape is taken literally.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	if u, err := strconv.Unquote(`"` + strings.ReplaceAll(s, `"`, `\"`) + `"`); err == nil {
		return u
	}
	return s
}

// pairList holds the values of a repeatable key=value flag. cli's slice
// flags split on commas, which would cut apart config values such as
// follower.replication.throttled.replicas=0:1,1:2.
type pairList struct {
	keyOnly bool // for --delete-config: keys without values
	raw     bool // any value as given (groups' --group and --topic)
	items   []string
}

func (p *pairList) Set(v string) error {
	if p.raw {
		if v == "" {
			return errors.New("empty value")
		}
	} else if p.keyOnly {
		if strings.TrimSpace(v) == "" || strings.Contains(v, "=") {
			return fmt.Errorf("want a config name, got %q", v)
		}
	} else if k, _, ok := strings.Cut(v, "="); !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("want key=value, got %q", v)
	}
	p.items = append(p.items, v)
	return nil
}

func (p *pairList) String() string { return strings.Join(p.items, " ") }

// pairs splits every item at its first '='.
func (p *pairList) pairs() [][2]string {
	out := make([][2]string, 0, len(p.items))
	for _, it := range p.items {
		k, v, _ := strings.Cut(it, "=")
		out = append(out, [2]string{strings.TrimSpace(k), v})
	}
	return out
}

// pairsFlag is a repeatable flag whose value is a fresh pairList for every
// parse. A cli.GenericFlag would keep one Value for the life of the process,
// so a second app.Run (as in the tests) would see the first run's values.
type pairsFlag struct {
	Name    string
	Usage   string
	KeyOnly bool
	Raw     bool // values are not key=value pairs; see valuesOf
}

func (f *pairsFlag) Apply(set *flag.FlagSet) error {
	set.Var(&pairList{keyOnly: f.KeyOnly, raw: f.Raw}, f.Name, f.Usage)
	return nil
}
func (f *pairsFlag) Names() []string         { return []string{f.Name} }
func (f *pairsFlag) IsSet() bool             { return false }
func (f *pairsFlag) String() string          { return cli.FlagStringer(f) }
func (f *pairsFlag) TakesValue() bool        { return true }
func (f *pairsFlag) GetUsage() string        { return f.Usage }
func (f *pairsFlag) GetValue() string        { return "" }
func (f *pairsFlag) GetDefaultText() string  { return "" }
func (f *pairsFlag) GetEnvVars() []string    { return nil }
func (f *pairsFlag) GetCategory() string     { return "" }
func (f *pairsFlag) IsVisible() bool         { return true }
func (f *pairsFlag) IsRequired() bool        { return false }
func (f *pairsFlag) IsDefaultVisible() bool  { return false }
func (f *pairsFlag) GetDefaultTextRaw() bool { return false }

// pairsOf returns the parsed values of a pairsFlag.
func pairsOf(c *cli.Context, name string) *pairList {
	if p, ok := c.Generic(name).(*pairList); ok {
		return p
	}
	return &pairList{}
}

// valuesOf returns the values of a Raw pairsFlag in the order given: a
// repeatable flag whose values keep their commas (cli's slice flags would
// split topic:0,1 apart).
func valuesOf(c *cli.Context, name string) []string {
	return pairsOf(c, name).items
}

// signalContext ends on SIGINT or SIGTERM, so a consumer or a bench run
// interrupted by Ctrl-C still commits and prints its summary.
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	if parent == nil {
		parent = context.Background()
	}
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

// requireTopic gives one wording for the most common mistake.
func requireTopic(c *cli.Context) (string, error) {
	t := c.String("topic")
	if t == "" {
		return "", fmt.Errorf("%s: --topic is required", c.Command.FullName())
	}
	return t, nil
}
