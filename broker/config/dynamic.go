package config

import (
	"errors"
	"fmt"
)

// WithDynamic returns a copy of c in which the given keys take their
// dynamic broker config values where one is set: perBroker (this broker's)
// over cluster (the cluster-wide default) over the file's value, Kafka's
// precedence for dynamic broker configs. The dynamic values were validated
// when they were stored; one that does not parse or validate here (a key
// whose rules raftka has since narrowed) keeps the file's value and is
// reported in the error, the others still apply. Keys outside the table,
// or without a setter, are an error and change nothing.
func (c *Config) WithDynamic(keys []string, perBroker, cluster map[string]string) (*Config, error) {
	out := *c
	var errs []error
	for _, k := range keys {
		def, ok := defsByName[k]
		if !ok || def.set == nil {
			errs = append(errs, fmt.Errorf("%s: not a key a dynamic config can set", k))
			continue
		}
		text, ok := perBroker[k]
		if !ok {
			text, ok = cluster[k]
		}
		if !ok {
			continue
		}
		v, err := parseValue(def, text)
		if err == nil {
			err = def.set(&out, v)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("dynamic config %w", err))
		}
	}
	return &out, errors.Join(errs...)
}
