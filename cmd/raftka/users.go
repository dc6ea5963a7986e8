package main

// `raftka users scram set | describe | delete` is kafka-configs.sh's SCRAM
// half (--entity-type users --alter --add-config 'SCRAM-SHA-256=[...]',
// --delete-config SCRAM-SHA-512, --describe) over AlterUserScramCredentials
// and DescribeUserScramCredentials. As Kafka's admin client does, the salt
// and the salted password are made here: the password never leaves this
// process, the broker only sees Hi(password, salt, iterations).

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

// defaultScramIterations is kafka-configs.sh's default (ConfigCommand's
// DEFAULT_SCRAM_ITERATIONS), the mechanisms' minimum.
const defaultScramIterations = metadata.MinScramIterations

func init() {
	userFlag := func(usage string, required bool) cli.Flag {
		return &cli.StringFlag{Name: "user", Aliases: []string{"entity-name"}, Usage: usage, Required: required}
	}
	register(&cli.Command{
		Name:  "users",
		Usage: "manage users (like kafka-configs.sh --entity-type users)",
		Subcommands: []*cli.Command{{
			Name:  "scram",
			Usage: "set, describe and delete SCRAM credentials (AlterUserScramCredentials, DescribeUserScramCredentials)",
			Subcommands: []*cli.Command{
				{
					Name:  "set",
					Usage: "create or replace a user's SCRAM credentials",
					Description: "Give the credentials as kafka-configs.sh takes them:\n" +
						"  --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]'\n" +
						"or one mechanism with --mechanism, --iterations and --password or --password-file\n" +
						"(a file's first line; - reads standard input), which keeps the password off the command line.",
					Flags: []cli.Flag{
						bootstrapFlag(), bootstrapControllerFlag(), requestTimeoutFlag(),
						userFlag("the user (principal name without User:)", true),
						&pairsFlag{Name: "add-config", Raw: true, Usage: "MECHANISM=[iterations=N,password=P][,MECHANISM=[...]] as kafka-configs.sh takes it (repeatable)"},
						&cli.StringFlag{Name: "mechanism", Usage: "SCRAM-SHA-256 or SCRAM-SHA-512, for --password / --password-file"},
						&cli.IntFlag{Name: "iterations", Value: defaultScramIterations, Usage: "PBKDF2 iterations, for --password / --password-file (4096 to 16384)"},
						&cli.StringFlag{Name: "password", Usage: "the password, with --mechanism"},
						&cli.StringFlag{Name: "password-file", Usage: "read the password from the first line of this file (- for standard input), with --mechanism"},
					},
					Action: usersScramSet,
				},
				{
					Name:  "describe",
					Usage: "show users' SCRAM mechanisms and iterations (every user without --user)",
					Flags: []cli.Flag{
						bootstrapFlag(), bootstrapControllerFlag(), requestTimeoutFlag(),
						&cli.StringSliceFlag{Name: "user", Aliases: []string{"entity-name"}, Usage: "a user to describe (repeatable)"},
					},
					Action: usersScramDescribe,
				},
				{
					Name:  "delete",
					Usage: "delete a user's SCRAM credentials (every mechanism it has without --mechanism)",
					Flags: []cli.Flag{
						bootstrapFlag(), bootstrapControllerFlag(), requestTimeoutFlag(),
						userFlag("the user (principal name without User:)", true),
						&cli.StringSliceFlag{Name: "mechanism", Aliases: []string{"delete-config"}, Usage: "SCRAM-SHA-256 or SCRAM-SHA-512 (repeatable)"},
					},
					Action: usersScramDelete,
				},
			},
		}},
	})
}

// scramSetting is one mechanism's new credential as typed.
type scramSetting struct {
	mech       metadata.ScramMechanism
	iterations int32
	password   string
}

// splitOutsideBrackets cuts s at every sep that is not inside [...], as
// kafka-configs.sh splits --add-config.
func splitOutsideBrackets(s string, sep byte) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			if depth > 0 {
				depth--
			}
		case sep:
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// scramCredentialPattern is kafka-configs.sh's grammar of one credential:
// iterations, if given, comes first, and the password is everything after
// "password=" (so a comma inside the brackets is part of it).
var scramCredentialPattern = regexp.MustCompile(`^(?:iterations=(-?[0-9]*),)?password=(.*)$`)

// parseScramAddConfig reads one --add-config value the way kafka-configs.sh
// does: entries split at commas outside brackets, each MECHANISM=value with
// the brackets removed, the value iterations=N,password=P (iterations
// optional, -1 meaning the default).
func parseScramAddConfig(s string) ([]scramSetting, error) {
	var out []scramSetting
	for _, entry := range splitOutsideBrackets(s, ',') {
		kv := splitOutsideBrackets(entry, '=')
		if len(kv) != 2 {
			return nil, fmt.Errorf(`--add-config %q: invalid entity config: all configs to be added must be in the format "key=val"`, redactPassword(entry))
		}
		name := strings.TrimSpace(kv[0])
		value := strings.TrimSpace(strings.NewReplacer("[", "", "]", "").Replace(kv[1]))
		var mech metadata.ScramMechanism
		switch name {
		case "SCRAM-SHA-256":
			mech = metadata.ScramSHA256
		case "SCRAM-SHA-512":
			mech = metadata.ScramSHA512
		default:
			hint := ""
			if isQuotaKey(name) {
				hint = " (quotas are set with raftka quotas set)"
			}
			return nil, fmt.Errorf("--add-config: only SCRAM credential configs (SCRAM-SHA-256, SCRAM-SHA-512) can be added here%s; unexpected config names: %s", hint, name)
		}
		m := scramCredentialPattern.FindStringSubmatchIndex(value)
		if m == nil {
			return nil, fmt.Errorf("invalid credential property %s=%s", name, redactPassword(value))
		}
		iters := int64(defaultScramIterations)
		if m[2] >= 0 { // iterations= was given
			if v := value[m[2]:m[3]]; v != "-1" {
				n, err := strconv.ParseInt(v, 10, 32)
				if err != nil {
					return nil, fmt.Errorf("invalid credential property %s=%s: iterations %q is not a number", name, redactPassword(value), v)
				}
				iters = n
			}
		}
		password := value[m[4]:m[5]]
		if err := checkScramSetting(mech, iters, password); err != nil {
			return nil, err
		}
		out = append(out, scramSetting{mech: mech, iterations: int32(iters), password: password})
	}
	return out, nil
}

// checkScramSetting is what Kafka's tool and admin client refuse before
// asking the broker: too few iterations and an empty password (the
// controller checks the upper bound).
func checkScramSetting(mech metadata.ScramMechanism, iters int64, password string) error {
	if iters < int64(metadata.MinScramIterations) {
		return fmt.Errorf("iterations %d is less than the minimum %d required for %v", iters, metadata.MinScramIterations, mech)
	}
	if iters > 1<<31-1 {
		return fmt.Errorf("iterations %d is more than a 32-bit number holds", iters)
	}
	if password == "" {
		return fmt.Errorf("the %v password must not be empty", mech)
	}
	return nil
}

// redactPassword hides what follows password= in an error message.
func redactPassword(v string) string {
	if i := strings.Index(v, "password="); i >= 0 {
		return v[:i] + "password=[hidden]"
	}
	return v
}

func isQuotaKey(k string) bool {
	switch k {
	case "producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate", "connection_creation_rate":
		return true
	}
	return false
}

// scramSalt makes a salt as Kafka's admin client does
// (ScramFormatter.secureRandomBytes): the UTF-8 bytes of a random 130-bit
// number written in base 36.
func scramSalt() ([]byte, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 130))
	if err != nil {
		return nil, err
	}
	return []byte(n.Text(36)), nil
}

// scramSettings collects set's credentials from --add-config or from
// --mechanism with --password / --password-file.
func scramSettings(c *cli.Context) ([]scramSetting, error) {
	var out []scramSetting
	for _, v := range valuesOf(c, "add-config") {
		s, err := parseScramAddConfig(v)
		if err != nil {
			return nil, err
		}
		out = append(out, s...)
	}
	single := c.IsSet("mechanism") || c.IsSet("password") || c.IsSet("password-file") || c.IsSet("iterations")
	if single {
		if len(out) > 0 {
			return nil, errors.New("give --add-config or --mechanism with --password / --password-file, not both")
		}
		mech, ok := metadata.ScramMechanismByName(c.String("mechanism"))
		if !ok {
			return nil, fmt.Errorf("--mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", c.String("mechanism"))
		}
		var password string
		switch {
		case c.IsSet("password") && c.IsSet("password-file"):
			return nil, errors.New("give --password or --password-file, not both")
		case c.IsSet("password"):
			password = c.String("password")
		case c.IsSet("password-file"):
			p, err := readPasswordFile(c.String("password-file"), c.App.Reader)
			if err != nil {
				return nil, err
			}
			password = p
		default:
			return nil, fmt.Errorf("--mechanism %v: give --password or --password-file", mech)
		}
		iters := int64(c.Int("iterations"))
		if err := checkScramSetting(mech, iters, password); err != nil {
			return nil, err
		}
		out = append(out, scramSetting{mech: mech, iterations: int32(iters), password: password})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: give --add-config 'SCRAM-SHA-256=[password=...]' or --mechanism with --password / --password-file", c.Command.FullName())
	}
	seen := map[metadata.ScramMechanism]bool{}
	for _, s := range out {
		if seen[s.mech] {
			return nil, fmt.Errorf("%v is given twice", s.mech)
		}
		seen[s.mech] = true
	}
	return out, nil
}

// readPasswordFile returns the first line of path (of stdin for "-"),
// without its line ending.
func readPasswordFile(path string, stdin io.Reader) (string, error) {
	var r io.Reader = stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("--password-file: %w", err)
		}
		defer f.Close()
		r = f
	}
	if r == nil {
		r = os.Stdin
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("--password-file: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// scramUpsertion builds one upsertion with a fresh salt and the salted
// password.
func scramUpsertion(user string, s scramSetting) (kmsg.AlterUserSCRAMCredentialsRequestUpsertion, error) {
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	salt, err := scramSalt()
	if err != nil {
		return u, err
	}
	salted, err := metadata.SaltPassword(s.mech, s.password, salt, s.iterations)
	if err != nil {
		return u, err
	}
	u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = user, int8(s.mech), s.iterations, salt, salted
	return u, nil
}

func usersScramSet(c *cli.Context) error {
	user := c.String("user")
	if user == "" {
		return fmt.Errorf("%s: --user must not be empty", c.Command.FullName())
	}
	settings, err := scramSettings(c)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	for _, s := range settings {
		u, err := scramUpsertion(user, s)
		if err != nil {
			return err
		}
		req.Upsertions = append(req.Upsertions, u)
	}
	return alterScram(c, req, user)
}

// alterScram sends req and reports the user's result as kafka-configs.sh
// does.
func alterScram(c *cli.Context, req *kmsg.AlterUserSCRAMCredentialsRequest, user string) error {
	return adminCall(c, func(ctx context.Context, cl *kgo.Client) error {
		return alterScramWith(ctx, c, cl, req, user)
	})
}

func alterScramWith(ctx context.Context, c *cli.Context, cl *kgo.Client, req *kmsg.AlterUserSCRAMCredentialsRequest, user string) error {
	resp, err := req.RequestWith(ctx, requestor(c, cl))
	if err != nil {
		return requestError(c, "alter user SCRAM credentials", err)
	}
	answered := false
	for _, r := range resp.Results {
		if r.User != user {
			continue
		}
		answered = true
		if err := responseError(r.ErrorCode, r.ErrorMessage); err != nil {
			return fmt.Errorf("SCRAM credentials of user %s: %w", user, err)
		}
	}
	if !answered {
		return fmt.Errorf("SCRAM credentials of user %s: the broker's answer does not name the user", user)
	}
	fmt.Fprintf(c.App.Writer, "Completed updating config for user %s.\n", user)
	return nil
}

// errUsersNotDescribed is describe's exit status when a named user has no
// credential; the lines were printed already.
var errUsersNotDescribed = errors.New("some users could not be described")

func usersScramDescribe(c *cli.Context) error {
	if err := describeNotOnControllers(c, "DescribeUserScramCredentials"); err != nil {
		return err
	}
	names := c.StringSlice("user")
	return adminCall(c, func(ctx context.Context, cl *kgo.Client) error {
		resp, err := describeScram(ctx, c, cl, names)
		if err != nil {
			return err
		}
		failed := false
		for _, r := range resp.Results {
			if err := responseError(r.ErrorCode, r.ErrorMessage); err != nil {
				failed = true
				fmt.Fprintf(c.App.Writer, "Error retrieving SCRAM credential configs for user-principal '%s': %v\n", r.User, err)
				continue
			}
			infos := make([]string, len(r.CredentialInfos))
			for i, ci := range r.CredentialInfos {
				infos[i] = fmt.Sprintf("%v=iterations=%d", metadata.ScramMechanism(ci.Mechanism), ci.Iterations)
			}
			fmt.Fprintf(c.App.Writer, "SCRAM credential configs for user-principal '%s' are %s\n", r.User, strings.Join(infos, ", "))
		}
		if failed {
			return errUsersNotDescribed
		}
		return nil
	})
}

// describeScram asks for names (every user when empty); a request-level
// error is returned.
func describeScram(ctx context.Context, c *cli.Context, cl *kgo.Client, names []string) (*kmsg.DescribeUserSCRAMCredentialsResponse, error) {
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, n := range names {
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = n
		req.Users = append(req.Users, u)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, requestError(c, "describe user SCRAM credentials", err)
	}
	if err := responseError(resp.ErrorCode, resp.ErrorMessage); err != nil {
		return nil, fmt.Errorf("describe user SCRAM credentials: %w", err)
	}
	return resp, nil
}

func usersScramDelete(c *cli.Context) error {
	user := c.String("user")
	if user == "" {
		return fmt.Errorf("%s: --user must not be empty", c.Command.FullName())
	}
	var mechs []metadata.ScramMechanism
	for _, name := range c.StringSlice("mechanism") {
		m, ok := metadata.ScramMechanismByName(strings.TrimSpace(name))
		if !ok {
			return fmt.Errorf("--mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", name)
		}
		mechs = append(mechs, m)
	}
	if len(mechs) == 0 && bootstrapController(c) != "" {
		// Finding the user's mechanisms takes a DescribeUserScramCredentials,
		// which controllers do not serve.
		return fmt.Errorf("%s: with --bootstrap-controller, name the mechanisms to delete (--mechanism)", c.Command.FullName())
	}
	return adminCall(c, func(ctx context.Context, cl *kgo.Client) error {
		if len(mechs) == 0 {
			// Every mechanism the user has.
			resp, err := describeScram(ctx, c, cl, []string{user})
			if err != nil {
				return err
			}
			for _, r := range resp.Results {
				if r.User != user {
					continue
				}
				if err := responseError(r.ErrorCode, r.ErrorMessage); err != nil {
					if errors.Is(err, kerr.ResourceNotFound) {
						return fmt.Errorf("user %s has no SCRAM credentials: %w", user, err)
					}
					return fmt.Errorf("describe SCRAM credentials of user %s: %w", user, err)
				}
				for _, ci := range r.CredentialInfos {
					mechs = append(mechs, metadata.ScramMechanism(ci.Mechanism))
				}
			}
			if len(mechs) == 0 {
				return fmt.Errorf("user %s has no SCRAM credentials", user)
			}
		}
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		for _, m := range mechs {
			d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
			d.Name, d.Mechanism = user, int8(m)
			req.Deletions = append(req.Deletions, d)
		}
		return alterScramWith(ctx, c, cl, req, user)
	})
}
