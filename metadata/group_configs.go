package metadata

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ConfigResourceGroup is Kafka's GROUP config resource (type 32): dynamic
// per-group configs, set with IncrementalAlterConfigs and kept as Config
// records like topic and broker configs.
const ConfigResourceGroup ConfigResourceType = 32

// GroupConfigDef is one per-group config key: its name, what it means and
// the rule a value must pass. Share-group keys (share.*) join this table
// when share groups are built.
type GroupConfigDef struct {
	Name string
	// BrokerDefault names the broker key whose value applies when the
	// group sets none (what DescribeConfigs shows as the default).
	BrokerDefault string
	// Default is the value of a key with no broker key (BrokerDefault
	// ""); such keys are strings.
	Default  string
	Doc      string
	Validate func(string) error
}

func positiveInt(v string) error {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n <= 0 {
		return fmt.Errorf("must be a positive int")
	}
	return nil
}

// GroupConfigDefs are the per-group keys, sorted by name. The broker's
// min/max bounds (group.consumer.min/max.*) are applied where the value is
// used: the controller validates only what replay needs.
var GroupConfigDefs = []GroupConfigDef{
	{Name: "consumer.heartbeat.interval.ms", BrokerDefault: "group.consumer.heartbeat.interval.ms", Validate: positiveInt,
		Doc: "The heartbeat interval the group's consumer-protocol members are told to keep."},
	{Name: "consumer.session.timeout.ms", BrokerDefault: "group.consumer.session.timeout.ms", Validate: positiveInt,
		Doc: "How long the group's consumer-protocol members may go without a heartbeat before they are fenced."},
	{Name: "share.auto.offset.reset", Default: "latest", Validate: shareAutoOffsetReset,
		Doc: "Where a share group starts in a partition it has no state for: latest (the default), earliest, or by_duration:PnDTnHnMn.nS."},
	{Name: "share.delivery.count.limit", BrokerDefault: "group.share.delivery.count.limit", Validate: intBetween(2, 10),
		Doc: "How many times the share group delivers a record before archiving it."},
	{Name: "share.isolation.level", Default: "read_uncommitted", Validate: oneOf("read_uncommitted", "read_committed"),
		Doc: "read_uncommitted (the default) delivers up to the high watermark; read_committed up to the last stable offset, without aborted records."},
	{Name: "share.record.lock.duration.ms", BrokerDefault: "group.share.record.lock.duration.ms", Validate: intBetween(1000, 3600000),
		Doc: "How long a member of the share group holds acquired records (within group.share.min/max.record.lock.duration.ms)."},
}

func intBetween(lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be an int in [%d, %d]", lo, hi)
		}
		return nil
	}
}

// shareAutoOffsetReset checks the form; broker/share parses the duration.
func shareAutoOffsetReset(v string) error {
	l := strings.ToLower(strings.TrimSpace(v))
	if l == "latest" || l == "earliest" || (strings.HasPrefix(l, "by_duration:p") && len(l) > len("by_duration:p")) {
		return nil
	}
	return fmt.Errorf("must be latest, earliest or by_duration:PnDTnHnMn.nS")
}

// LookupGroupConfig returns a per-group key's definition.
func LookupGroupConfig(name string) (GroupConfigDef, bool) {
	i := slices.IndexFunc(GroupConfigDefs, func(d GroupConfigDef) bool { return d.Name == name })
	if i < 0 {
		return GroupConfigDef{}, false
	}
	return GroupConfigDefs[i], true
}

// ValidateGroupConfig checks one per-group config value (ErrInvalidConfig
// for an unknown key or a bad value).
func ValidateGroupConfig(key, value string) error {
	d, ok := LookupGroupConfig(key)
	if !ok {
		return fmt.Errorf("%w: unknown group config %s", ErrInvalidConfig, key)
	}
	if err := d.Validate(value); err != nil {
		return fmt.Errorf("%w: invalid value %s for configuration %s: %v", ErrInvalidConfig, value, key, err)
	}
	return nil
}

// GroupConfigs returns a group's dynamic configs.
func (img *Image) GroupConfigs(group string) map[string]string {
	return maps.Clone(img.groupConfigs[group])
}
