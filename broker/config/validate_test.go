package config

import (
	"reflect"
	"testing"
)

// TestEveryKeyHandled holds defs.go and fromValues together: every key of
// the table is stored by its setter or read by a rule, every rule reads
// keys of the table, and each setter takes its Type's value and stores it
// in a field of its own.
func TestEveryKeyHandled(t *testing.T) {
	ruleKeys := map[string]bool{}
	for _, r := range rules {
		for _, k := range r.keys {
			if _, ok := defsByName[k]; !ok {
				t.Errorf("a rule reads %s, which defs.go does not define", k)
			}
			ruleKeys[k] = true
		}
	}
	// List keys need values their setters parse; the scalar types share one.
	listSamples := map[string][]string{
		"process.roles":                         {"broker"},
		"controller.quorum.voters":              {"1@host:9093"},
		"controller.quorum.bootstrap.servers":   {"host:9093"},
		"controller.listener.names":             {"controller"},
		"listener.security.protocol.map":        {"CLIENT:PLAINTEXT"},
		"listeners":                             {"CLIENT://:9092"},
		"log.cleanup.policy":                    {"compact"},
		"group.coordinator.rebalance.protocols": {"classic"},
		"group.consumer.assignors":              {"range"},
		"group.share.assignors":                 {"simple"},
	}
	// Strings that hold numbers (Kafka's doubles) need a number.
	stringSamples := map[string]string{"log.cleaner.io.max.bytes.per.second": "5e6", "log.cleaner.min.cleanable.ratio": "0.25"}
	sample := func(d *Def) (any, bool) {
		switch d.Type {
		case TypeInt:
			return int32(7), true
		case TypeLong, TypeDurationMs:
			return int64(7), true
		case TypeBool:
			return true, true
		case TypeString, TypeClass, TypePassword:
			if v, ok := stringSamples[d.Name]; ok {
				return v, true
			}
			return "x", true
		case TypeList:
			l, ok := listSamples[d.Name]
			return l, ok
		}
		return nil, false
	}
	// Keys whose validator is their whole effect store nothing.
	storesNothing := map[string]bool{}

	fieldOwner := map[string]string{}
	for i := range defs {
		d := &defs[i]
		if d.set == nil {
			if !ruleKeys[d.Name] {
				t.Errorf("%s has no setter and no rule reads it: fromValues ignores it", d.Name)
			}
			continue
		}
		v, ok := sample(d)
		if !ok {
			t.Errorf("%s: no sample value of type %v here; add one", d.Name, d.Type)
			continue
		}
		var c Config
		if err := d.set(&c, v); err != nil {
			t.Errorf("%s: setter refuses %v: %v", d.Name, v, err)
			continue
		}
		var changed []string
		rv := reflect.ValueOf(c)
		for f := 0; f < rv.NumField(); f++ {
			if !rv.Field(f).IsZero() {
				changed = append(changed, rv.Type().Field(f).Name)
			}
		}
		switch {
		case storesNothing[d.Name]:
			if len(changed) > 0 {
				t.Errorf("%s stores %v", d.Name, changed)
			}
		case len(changed) == 0:
			t.Errorf("%s: setter stores nothing", d.Name)
		}
		for _, f := range changed {
			if other, dup := fieldOwner[f]; dup {
				t.Errorf("%s and %s both set Config.%s", other, d.Name, f)
			}
			fieldOwner[f] = d.Name
		}
	}
}

// TestRulesReadTheirKeysOnly: a rule sees only the keys it lists, so a rule
// that reads another key finds it unset (and the drift test above would not
// know the key is read).
func TestRulesReadTheirKeysOnly(t *testing.T) {
	v := values{"log.dirs": []string{"a"}, "log.dir": "b", "node.id": int32(1)}
	got := v.only([]string{"log.dirs", "log.dir", "absent"})
	if len(got) != 2 || !got.has("log.dirs") || !got.has("log.dir") || got.has("node.id") {
		t.Errorf("only = %v", got)
	}
}
