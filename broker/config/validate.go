package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// fromValues builds the Config from parsed values: every key's setter (the
// set field of its Def) stores its own value, then the rules derive what
// depends on several keys and check the cross-field rules, Kafka's KRaft
// checks among them. Every broken rule is reported, not just the first.
func fromValues(v values, src map[string]Source) (*Config, error) {
	c := &Config{}
	p := &problems{}
	for i := range defs {
		d := &defs[i]
		if val, ok := v[d.Name]; ok && d.set != nil {
			p.add(d.set(c, val))
		}
	}
	for _, r := range rules {
		r.apply(c, v.only(r.keys), src, p)
	}
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return c, nil
}

// problems collects what fromValues reports.
type problems struct{ errs []error }

func (p *problems) add(err error) {
	if err != nil {
		p.errs = append(p.errs, err)
	}
}

func (p *problems) fail(format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf(format, args...))
}

// A rule derives Config fields from several keys, or checks keys against
// each other, after every setter has run. It reads the values of its keys
// only (others are absent from the values it gets); a key of the table is
// handled by its setter, a rule, or both (TestEveryKeyHandled).
type rule struct {
	keys  []string
	apply func(c *Config, v values, src map[string]Source, p *problems)
}

// rules run in this order; later ones read what earlier ones set.
var rules = []rule{
	{[]string{"node.id"}, func(_ *Config, v values, _ map[string]Source, p *problems) {
		if !v.has("node.id") {
			p.fail("node.id must be set")
		}
	}},
	{[]string{"process.roles"}, func(_ *Config, v values, _ map[string]Source, p *problems) {
		if !v.has("process.roles") {
			p.fail("process.roles must be set to broker, controller or both: raftka runs in KRaft mode only")
		}
	}},
	{nil, defaultControllerProtocols},
	{nil, func(c *Config, _ values, _ map[string]Source, p *problems) {
		withProtocol(c, "listeners", c.Listeners, p)
	}},
	{[]string{"controller.quorum.voters", "controller.quorum.bootstrap.servers"}, func(c *Config, _ values, _ map[string]Source, p *problems) {
		if len(c.Voters) == 0 && len(c.BootstrapServers) == 0 {
			// Kafka's QuorumConfig message.
			p.fail("either controller.quorum.bootstrap.servers must contain the set of bootstrap controllers or controller.quorum.voters must contain a parseable set of controllers (id@host:port,...)")
		}
	}},
	{nil, roleListeners},
	{[]string{"inter.broker.listener.name", "security.inter.broker.protocol"}, interBrokerListener},
	{[]string{"advertised.listeners"}, advertisedListeners},
	{[]string{"log.dirs", "log.dir"}, logDirs},
	// Retention and roll: Kafka's precedence, ms over minutes over hours.
	{[]string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}, func(c *Config, v values, _ map[string]Source, _ *problems) {
		switch {
		case v.has("log.retention.ms"):
			c.LogRetentionMs = v.int64("log.retention.ms")
		case v.has("log.retention.minutes"):
			c.LogRetentionMs = int64(v.int32("log.retention.minutes")) * 60_000
		default:
			c.LogRetentionMs = int64(v.int32("log.retention.hours")) * 3_600_000
		}
		if c.LogRetentionMs < 0 {
			c.LogRetentionMs = -1
		}
	}},
	{[]string{"log.roll.ms", "log.roll.hours"}, func(c *Config, v values, _ map[string]Source, _ *problems) {
		if v.has("log.roll.ms") {
			c.LogRollMs = v.int64("log.roll.ms")
		} else {
			c.LogRollMs = int64(v.int32("log.roll.hours")) * 3_600_000
		}
	}},
	{[]string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}, func(c *Config, v values, _ map[string]Source, _ *problems) {
		if v.has("log.flush.interval.ms") {
			c.LogFlushIntervalMs = v.int64("log.flush.interval.ms")
		} else {
			c.LogFlushIntervalMs = v.int64("log.flush.scheduler.interval.ms")
		}
	}},
	{nil, func(c *Config, _ values, _ map[string]Source, p *problems) {
		if c.ReplicaFetchWaitMax > c.ReplicaLagTimeMax {
			p.fail("replica.fetch.wait.max.ms (%v) must not exceed replica.lag.time.max.ms (%v), or healthy followers would drop out of the ISR", c.ReplicaFetchWaitMax, c.ReplicaLagTimeMax)
		}
		if c.BrokerHeartbeatInterval >= c.BrokerSessionTimeout {
			p.fail("broker.heartbeat.interval.ms (%v) must be less than broker.session.timeout.ms (%v), or live brokers get fenced", c.BrokerHeartbeatInterval, c.BrokerSessionTimeout)
		}
		if c.GroupConsumerMinSessionTimeout > c.GroupConsumerMaxSessionTimeout ||
			c.GroupConsumerSessionTimeout < c.GroupConsumerMinSessionTimeout || c.GroupConsumerSessionTimeout > c.GroupConsumerMaxSessionTimeout {
			p.fail("group.consumer.session.timeout.ms (%v) must lie within group.consumer.min.session.timeout.ms (%v) and group.consumer.max.session.timeout.ms (%v)", c.GroupConsumerSessionTimeout, c.GroupConsumerMinSessionTimeout, c.GroupConsumerMaxSessionTimeout)
		}
		if c.GroupConsumerMinHeartbeatInterval > c.GroupConsumerMaxHeartbeatInterval ||
			c.GroupConsumerHeartbeatInterval < c.GroupConsumerMinHeartbeatInterval || c.GroupConsumerHeartbeatInterval > c.GroupConsumerMaxHeartbeatInterval {
			p.fail("group.consumer.heartbeat.interval.ms (%v) must lie within group.consumer.min.heartbeat.interval.ms (%v) and group.consumer.max.heartbeat.interval.ms (%v)", c.GroupConsumerHeartbeatInterval, c.GroupConsumerMinHeartbeatInterval, c.GroupConsumerMaxHeartbeatInterval)
		}
		if c.GroupConsumerHeartbeatInterval >= c.GroupConsumerSessionTimeout {
			p.fail("group.consumer.heartbeat.interval.ms (%v) must be less than group.consumer.session.timeout.ms (%v)", c.GroupConsumerHeartbeatInterval, c.GroupConsumerSessionTimeout)
		}
		if c.GroupMinSessionTimeout > c.GroupMaxSessionTimeout {
			p.fail("group.min.session.timeout.ms (%v) must not exceed group.max.session.timeout.ms (%v)", c.GroupMinSessionTimeout, c.GroupMaxSessionTimeout)
		}
		checkShareGroups(c, p)
	}},
}

// defaultControllerProtocols is Kafka's rule: with the default
// listener.security.protocol.map, controller listener names that are not
// protocol names speak PLAINTEXT.
func defaultControllerProtocols(c *Config, _ values, src map[string]Source, _ *problems) {
	if _, given := src["listener.security.protocol.map"]; given {
		return
	}
	for _, n := range c.ControllerListenerNames {
		if _, ok := c.ListenerSecurityProtocolMap[n]; !ok {
			c.ListenerSecurityProtocolMap[n] = "PLAINTEXT"
		}
	}
}

// withProtocol gives each listener of key its security protocol from the
// map (what each protocol needs is checked in security.go).
func withProtocol(c *Config, key string, ls []Listener, p *problems) {
	for i := range ls {
		proto, ok := c.ListenerSecurityProtocolMap[ls[i].Name]
		if !ok {
			p.fail("%s: listener %s has no security protocol in listener.security.protocol.map", key, ls[i].Name)
		}
		ls[i].SecurityProtocol = proto
	}
}

// hasListener reports whether listeners has one named name.
func (c *Config) hasListener(name string) bool { _, ok := c.Listener(name); return ok }

// roleListeners checks the roles against the voters and the listeners.
func roleListeners(c *Config, _ values, _ map[string]Source, p *problems) {
	isVoter := slices.ContainsFunc(c.Voters, func(vt Voter) bool { return vt.ID == c.NodeID })
	if c.Roles.Controller {
		if len(c.Voters) > 0 && !isVoter {
			p.fail("node.id=%d is not among controller.quorum.voters: a node with the controller role must be a voter", c.NodeID)
		}
		if len(c.ControllerListenerNames) > 0 && !slices.ContainsFunc(c.ControllerListenerNames, c.hasListener) {
			p.fail("listeners has none of controller.listener.names (%s): a node with the controller role needs its controller listener", strings.Join(c.ControllerListenerNames, ","))
		}
		if !c.Roles.Broker {
			for _, l := range c.Listeners {
				if !c.IsControllerListener(l.Name) {
					p.fail("listeners: %s is not in controller.listener.names; a controller-only node has controller listeners only", l.Name)
				}
			}
		}
	}
	if c.Roles.Broker && !c.Roles.Controller {
		if isVoter {
			p.fail("node.id=%d is among controller.quorum.voters but process.roles=broker: a broker-only node is not a voter", c.NodeID)
		}
		// Unlike Kafka's, a broker-only node serves one controller
		// listener: it is a Raft non-voter, and the Raft leader sends it
		// the metadata log there (hashicorp/raft pushes to its peers).
		n := 0
		for _, l := range c.Listeners {
			if c.IsControllerListener(l.Name) {
				n++
			}
		}
		if n > 1 {
			p.fail("listeners: a broker-only node serves one controller listener (its Raft non-voter's), not %d", n)
		}
	}
}

// interBrokerListener: inter.broker.listener.name, or the listener named
// after security.inter.broker.protocol, as Kafka resolves it.
func interBrokerListener(c *Config, v values, src map[string]Source, p *problems) {
	if !c.Roles.Broker {
		return
	}
	ib := strings.ToUpper(v.str("inter.broker.listener.name"))
	if ib != "" {
		if _, both := src["security.inter.broker.protocol"]; both {
			p.fail("inter.broker.listener.name and security.inter.broker.protocol must not both be set")
		}
	} else {
		ib = v.str("security.inter.broker.protocol")
	}
	switch {
	case c.IsControllerListener(ib):
		p.fail("inter.broker.listener.name=%s is a controller listener; brokers replicate over a broker listener", ib)
	case !c.hasListener(ib):
		p.fail("inter.broker.listener.name=%s is not among listeners", ib)
	}
	c.InterBrokerListenerName = ib
}

// advertisedListeners: as given, or the listeners without the controller
// listeners.
func advertisedListeners(c *Config, v values, _ map[string]Source, p *problems) {
	if !v.has("advertised.listeners") {
		for _, l := range c.Listeners {
			if !c.IsControllerListener(l.Name) {
				c.AdvertisedListeners = append(c.AdvertisedListeners, l)
			}
		}
		return
	}
	adv, err := parseListeners("advertised.listeners", v.list("advertised.listeners"))
	p.add(err)
	withProtocol(c, "advertised.listeners", adv, p)
	for _, l := range adv {
		switch {
		case c.Roles.Broker && c.IsControllerListener(l.Name):
			p.fail("advertised.listeners: %s is a controller listener; brokers must not advertise it to clients", l.Name)
		case !c.hasListener(l.Name):
			p.fail("advertised.listeners: %s is not among listeners", l.Name)
		case l.Host == "0.0.0.0" || l.Host == "::":
			p.fail("advertised.listeners: %s advertises the non-routable address %s", l.Name, l.Host)
		}
	}
	c.AdvertisedListeners = adv
}

// logDirs: log.dirs, else log.dir; the metadata log defaults to the first.
func logDirs(c *Config, v values, _ map[string]Source, p *problems) {
	switch {
	case len(v.list("log.dirs")) > 0:
		c.LogDirs = v.list("log.dirs")
	case v.str("log.dir") != "":
		c.LogDirs = []string{v.str("log.dir")}
	default:
		p.fail("log.dirs (or log.dir) must be set")
	}
	for i, d := range c.LogDirs {
		if slices.Contains(c.LogDirs[:i], d) {
			p.fail("log.dirs: %s is listed twice", d)
		}
	}
	if c.MetadataLogDir == "" && len(c.LogDirs) > 0 {
		c.MetadataLogDir = c.LogDirs[0]
	}
}

// softChecks finds settings that are legal but probably not meant.
func (c *Config) softChecks() []string {
	var w []string
	if l, ok := c.ControllerListener(); ok && c.Roles.Controller {
		for _, v := range c.Voters {
			if v.ID == c.NodeID && v.Port != l.Port {
				w = append(w, fmt.Sprintf("controller.quorum.voters: this node's entry %s has a port other than its controller listener %s; other voters will not reach it there unless something forwards the port", v, l))
			}
		}
	}
	for _, p := range c.GroupCoordinatorRebalanceProtocols {
		if p == "streams" || p == "share" {
			w = append(w, fmt.Sprintf("group.coordinator.rebalance.protocols: %s groups are not built; only classic and consumer are served", p))
		}
	}
	return w
}
