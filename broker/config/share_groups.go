package config

import (
	"fmt"
	"time"
)

func onlySimpleAssignor(v any) error {
	for _, a := range v.([]string) {
		if a != "simple" && a != "org.apache.kafka.coordinator.group.assignor.SimpleAssignor" {
			return fmt.Errorf("share group assignor %q is not available: Kafka 4.2 and raftka have only simple", a)
		}
	}
	if len(v.([]string)) == 0 {
		return fmt.Errorf("at least one share group assignor is needed (simple)")
	}
	return nil
}

// checkShareGroups applies Kafka's GroupCoordinatorConfig rules to the
// group.share.* values: each within its min and max, and the heartbeat
// interval below the session timeout.
func checkShareGroups(c *Config, p *problems) {
	within := func(name string, v, lo, hi time.Duration, loName, hiName string) {
		if v < lo {
			p.fail("%s (%v) must be at least %s (%v)", name, v, loName, lo)
		}
		if v > hi {
			p.fail("%s (%v) must be at most %s (%v)", name, v, hiName, hi)
		}
	}
	within("group.share.session.timeout.ms", c.ShareGroupSessionTimeout, c.ShareGroupMinSessionTimeout, c.ShareGroupMaxSessionTimeout,
		"group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms")
	within("group.share.heartbeat.interval.ms", c.ShareGroupHeartbeatInterval, c.ShareGroupMinHeartbeatInterval, c.ShareGroupMaxHeartbeatInterval,
		"group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms")
	within("group.share.record.lock.duration.ms", c.ShareRecordLockDuration, c.ShareMinRecordLockDuration, c.ShareMaxRecordLockDuration,
		"group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms")
	if c.ShareGroupHeartbeatInterval >= c.ShareGroupSessionTimeout {
		p.fail("group.share.heartbeat.interval.ms (%v) must be less than group.share.session.timeout.ms (%v)", c.ShareGroupHeartbeatInterval, c.ShareGroupSessionTimeout)
	}
}
