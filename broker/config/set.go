package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"
)

// A setter stores one key's parsed value (of the Go type its Def's Type
// names) in a Config. It sees no other key: what depends on several keys is
// a rule (validate.go). An error is reported like a value that does not
// validate, and the other keys are still set.
type setter func(c *Config, v any) error

// to stores the value as parsed: int32 (TypeInt), int64 (TypeLong), bool,
// string or []string.
func to[T int32 | int64 | bool | string | []string](field func(*Config) *T) setter {
	return func(c *Config, v any) error {
		*field(c) = v.(T)
		return nil
	}
}

// toInt16 stores a TypeInt value whose validator keeps it within int16
// (replication factors).
func toInt16(field func(*Config) *int16) setter {
	return func(c *Config, v any) error {
		*field(c) = int16(v.(int32))
		return nil
	}
}

// toUint64 stores a TypeLong value whose validator keeps it non-negative.
func toUint64(field func(*Config) *uint64) setter {
	return func(c *Config, v any) error {
		*field(c) = uint64(v.(int64))
		return nil
	}
}

// toDuration stores a TypeDurationMs value, saturating (msToDuration).
func toDuration(field func(*Config) *time.Duration) setter {
	return func(c *Config, v any) error {
		*field(c) = msToDuration(v.(int64))
		return nil
	}
}

// minutesToDuration stores a TypeInt count of minutes.
func minutesToDuration(field func(*Config) *time.Duration) setter {
	return func(c *Config, v any) error {
		*field(c) = msToDuration(int64(v.(int32)) * 60_000)
		return nil
	}
}

// secondsToDuration stores a TypeLong count of seconds, saturating.
func secondsToDuration(field func(*Config) *time.Duration) setter {
	return func(c *Config, v any) error {
		if secs := v.(int64); secs > math.MaxInt64/1000 {
			*field(c) = math.MaxInt64
		} else {
			*field(c) = msToDuration(secs * 1000)
		}
		return nil
	}
}

func setRoles(c *Config, v any) error {
	for _, r := range v.([]string) {
		c.Roles.Broker = c.Roles.Broker || r == "broker"
		c.Roles.Controller = c.Roles.Controller || r == "controller"
	}
	return nil
}

func setVoters(c *Config, v any) error {
	voters, err := parseVoters(v.([]string))
	if len(voters) > 0 {
		c.Voters = voters
	}
	return err
}

func setBootstrapServers(c *Config, v any) error {
	for _, e := range v.([]string) {
		host, port, err := net.SplitHostPort(e)
		if err != nil || host == "" {
			return fmt.Errorf("controller.quorum.bootstrap.servers: %q is not host:port", e)
		}
		if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
			return fmt.Errorf("controller.quorum.bootstrap.servers: %q: port out of range", e)
		}
		c.BootstrapServers = append(c.BootstrapServers, e)
	}
	return nil
}

func setControllerListenerNames(c *Config, v any) error {
	for _, n := range v.([]string) {
		c.ControllerListenerNames = append(c.ControllerListenerNames, strings.ToUpper(n))
	}
	if len(c.ControllerListenerNames) == 0 {
		return fmt.Errorf("controller.listener.names must be set (for example CONTROLLER)")
	}
	return nil
}

func setProtocolMap(c *Config, v any) error {
	m, err := parseProtocolMap(v.([]string))
	if err != nil {
		m = map[string]string{}
	}
	c.ListenerSecurityProtocolMap = m
	return err
}

// setListeners parses listeners; their security protocols come from the
// protocol map later (rule listenerProtocols).
func setListeners(c *Config, v any) error {
	listeners, err := parseListeners("listeners", v.([]string))
	c.Listeners = listeners
	if err != nil {
		return err
	}
	if len(listeners) == 0 {
		return fmt.Errorf("listeners must not be empty")
	}
	var errs []error
	ports := map[int]string{}
	for _, l := range listeners {
		if other, dup := ports[l.Port]; dup && l.Port != 0 {
			errs = append(errs, fmt.Errorf("listeners: %s and %s both use port %d", other, l.Name, l.Port))
		}
		ports[l.Port] = l.Name
	}
	return errors.Join(errs...)
}
