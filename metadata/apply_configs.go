package metadata

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

type configKey struct {
	typ  ConfigResourceType
	name string
	key  string
}

// configApplier replays config changes of the cluster, of brokers and of
// topics (the last through the topic applier, whose images hold them).
type configApplier struct {
	img            *Image
	topics         *topicApplier
	brokerCfgOwned bool
	groupCfgOwned  bool
	touched        map[configKey]bool
}

func setOrDelete(m map[string]string, r *Config) map[string]string {
	m = maps.Clone(m)
	if r.Delete {
		delete(m, r.Key)
	} else {
		if m == nil {
			m = make(map[string]string, 1)
		}
		m[r.Key] = r.Value
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

func (a *configApplier) config(r *Config) error {
	if r.Key == "" {
		return invalid("config with an empty key")
	}
	typ, name := r.ResourceType, r.ResourceName
	if typ == ConfigResourceBroker && name == "" {
		typ = ConfigResourceCluster
	}
	switch typ {
	case ConfigResourceCluster:
		if name != "" {
			return invalid("cluster config with resource name %q", name)
		}
		// Cluster configs are few; copying them per change keeps this simple.
		a.img.clusterConfigs = setOrDelete(a.img.clusterConfigs, r)
	case ConfigResourceBroker:
		id, err := strconv.ParseInt(name, 10, 32)
		if err != nil || id < 0 || strconv.Itoa(int(id)) != name {
			return invalid("broker config resource name %q is not a broker id", name)
		}
		if !a.brokerCfgOwned {
			a.img.brokerConfigs = maps.Clone(a.img.brokerConfigs)
			a.brokerCfgOwned = true
		}
		m := setOrDelete(a.img.brokerConfigs[int32(id)], r)
		if m == nil {
			delete(a.img.brokerConfigs, int32(id))
		} else {
			if a.img.brokerConfigs == nil {
				a.img.brokerConfigs = make(map[int32]map[string]string)
			}
			a.img.brokerConfigs[int32(id)] = m
		}
		if len(a.img.brokerConfigs) == 0 {
			a.img.brokerConfigs = nil
		}
	case ConfigResourceGroup:
		if name == "" {
			return invalid("group config without a group id")
		}
		if !a.groupCfgOwned {
			a.img.groupConfigs = maps.Clone(a.img.groupConfigs)
			a.groupCfgOwned = true
		}
		if m := setOrDelete(a.img.groupConfigs[name], r); m == nil {
			delete(a.img.groupConfigs, name)
		} else {
			if a.img.groupConfigs == nil {
				a.img.groupConfigs = make(map[string]map[string]string)
			}
			a.img.groupConfigs[name] = m
		}
		if len(a.img.groupConfigs) == 0 {
			a.img.groupConfigs = nil
		}
	case ConfigResourceTopic:
		id, ok := a.topics.idOf(name)
		if !ok {
			return fmt.Errorf("%w: %q", ErrUnknownTopic, name)
		}
		t, _ := a.topics.own(id)
		t.Configs = setOrDelete(t.Configs, r)
	default:
		return invalid("config resource type %d", r.ResourceType)
	}
	mark(&a.touched, configKey{typ, name, r.Key})
	return nil
}

// diff fills d.ConfigsChanged with the touched keys whose value differs.
// It reads topic configs from the sealed images.
func (a *configApplier) diff(old, next *Image, d *Delta) {
	for k := range a.touched {
		ov, oldOK := old.configValue(k)
		nv, newOK := next.configValue(k)
		if oldOK != newOK || ov != nv {
			d.ConfigsChanged = append(d.ConfigsChanged, ConfigChange{k.typ, k.name, k.key})
		}
	}
	slices.SortFunc(d.ConfigsChanged, func(a, b ConfigChange) int {
		return cmp.Or(cmp.Compare(a.ResourceType, b.ResourceType), strings.Compare(a.ResourceName, b.ResourceName), strings.Compare(a.Key, b.Key))
	})
}

func (img *Image) configValue(k configKey) (string, bool) {
	var m map[string]string
	switch k.typ {
	case ConfigResourceCluster:
		m = img.clusterConfigs
	case ConfigResourceBroker:
		id, err := strconv.ParseInt(k.name, 10, 32)
		if err != nil {
			return "", false
		}
		m = img.brokerConfigs[int32(id)]
	case ConfigResourceTopic:
		if t, ok := img.Topic(k.name); ok {
			m = t.Configs
		}
	case ConfigResourceGroup:
		m = img.groupConfigs[k.name]
	}
	v, ok := m[k.key]
	return v, ok
}
