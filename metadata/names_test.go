package metadata

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateTopicName(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
	}{
		{"orders", true},
		{"a", true},
		{"A.b_c-9", true},
		{"...", true},
		{strings.Repeat("x", 249), true},
		{strings.Repeat("x", 250), false},
		{"", false},
		{".", false},
		{"..", false},
		{"has space", false},
		{"slash/", false},
		{"ünï", false},
		{"tab\t", false},
		{"colon:", false},
	}
	for _, c := range cases {
		err := ValidateTopicName(c.name)
		if (err == nil) != c.ok {
			t.Errorf("%q: %v", c.name, err)
		}
		if err != nil && !errors.Is(err, ErrInvalidTopicName) {
			t.Errorf("%q: %v does not wrap ErrInvalidTopicName", c.name, err)
		}
	}
}

func TestCheckNewTopicName(t *testing.T) {
	img, _ := mustApply(t, NewImage(),
		&CreateTopic{Name: "a.b", ID: idA, Partitions: []PartitionRegistration{{Replicas: []int32{1}, Leader: 1}}},
		&CreateTopic{Name: "plain", ID: idB, Partitions: []PartitionRegistration{{Replicas: []int32{1}, Leader: 1}}},
	)
	cases := []struct {
		name string
		want error
	}{
		{"a_b", ErrTopicNameCollision},
		{"a.b", ErrTopicExists},
		{"plain", ErrTopicExists},
		{"a-b", nil},
		{"a.c", nil},
		{"x y", ErrInvalidTopicName},
	}
	for _, c := range cases {
		err := img.CheckNewTopicName(c.name)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%q: %v, want %v", c.name, err, c.want)
		}
	}
	if TopicCollisionKey("a.b_c") != "a_b_c" {
		t.Fatal("TopicCollisionKey")
	}
}
