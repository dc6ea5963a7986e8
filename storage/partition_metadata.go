package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// TopicID is a Kafka topic UUID: the same 128-bit Uuid as UUID, so one
// type carries one parse and one format. It is an alias, so conversions
// such as storage.TopicID(image.ID) keep working.
type TopicID = UUID

// ParseTopicID parses the String form (22 unpadded base64url characters).
func ParseTopicID(s string) (TopicID, error) {
	id, err := ParseUUID(s)
	if err != nil {
		return id, fmt.Errorf("bad topic id %q: %v", s, err)
	}
	return id, nil
}

// ParsePartitionMetadata parses a partition.metadata file:
//
//	version: 0
//	topic_id: <base64 uuid>
func ParsePartitionMetadata(data []byte) (TopicID, error) {
	var id TopicID
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) != 2 {
		return id, fmt.Errorf("%d lines, want 2", len(lines))
	}
	v, ok := strings.CutPrefix(lines[0], "version: ")
	if !ok || strings.TrimSpace(v) != "0" {
		return id, fmt.Errorf("bad version line %q", lines[0])
	}
	t, ok := strings.CutPrefix(lines[1], "topic_id: ")
	if !ok {
		return id, fmt.Errorf("bad topic_id line %q", lines[1])
	}
	return ParseTopicID(strings.TrimSpace(t))
}

// FormatPartitionMetadata renders the file.
func FormatPartitionMetadata(id TopicID) []byte {
	return []byte("version: 0\ntopic_id: " + id.String() + "\n")
}

// ReadPartitionMetadata reads path; ok is false if the file does not exist.
func ReadPartitionMetadata(path string) (id TopicID, ok bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return id, false, nil
	}
	if err != nil {
		return id, false, err
	}
	id, err = ParsePartitionMetadata(data)
	if err != nil {
		return id, false, fmt.Errorf("%w: %s: %v", ErrCorruptFile, path, err)
	}
	return id, true, nil
}

// WritePartitionMetadata writes path atomically.
func WritePartitionMetadata(path string, id TopicID) error {
	return WriteFileAtomic(path, FormatPartitionMetadata(id))
}
