package metadata

import (
	"fmt"
	"strings"
)

// MaxTopicNameLength is Kafka's limit (Topic.MAX_NAME_LENGTH): a partition
// directory is "<topic>-<partition>" and must fit in a 255-byte file name.
const MaxTopicNameLength = 249

// ValidateTopicName applies Kafka's topic name rules (Topic.validate): 1 to
// 249 characters from [a-zA-Z0-9._-], and not "." or "..". The error wraps
// ErrInvalidTopicName and says which rule failed.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: the name is empty", ErrInvalidTopicName)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q is not allowed", ErrInvalidTopicName, name)
	case len(name) > MaxTopicNameLength:
		return fmt.Errorf("%w: %d characters, the limit is %d", ErrInvalidTopicName, len(name), MaxTopicNameLength)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q contains %q; legal characters are ASCII letters, digits, '.', '_' and '-'", ErrInvalidTopicName, name, c)
		}
	}
	return nil
}

// TopicCollisionKey maps a name to the form under which Kafka considers two
// names colliding: metric names replace '.' with '_', so "a.b" and "a_b"
// cannot coexist (Topic.unifyCollisionChars).
func TopicCollisionKey(name string) string { return strings.ReplaceAll(name, ".", "_") }

// CheckNewTopicName validates a name for a topic about to be created: the
// name rules, that it does not exist (ErrTopicExists), and Kafka's '.'/'_'
// collision check against existing topics (ErrTopicNameCollision). The
// collision scan is linear in the number of topics and runs only for names
// containing '.' or '_', as in Kafka.
func (img *Image) CheckNewTopicName(name string) error {
	if err := ValidateTopicName(name); err != nil {
		return err
	}
	if _, ok := img.topicNames.get(name, hashString(name)); ok {
		return fmt.Errorf("%w: %q", ErrTopicExists, name)
	}
	if !strings.ContainsAny(name, "._") {
		return nil
	}
	key := TopicCollisionKey(name)
	var clash string
	img.topicNames.each(func(n string, _ [16]byte) {
		if clash == "" && TopicCollisionKey(n) == key {
			clash = n
		}
	})
	if clash != "" {
		return fmt.Errorf("%w: %q collides with existing topic %q ('.' and '_' are interchangeable in metric names)", ErrTopicNameCollision, name, clash)
	}
	return nil
}
