package kafkacode_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/raftka/raftka/broker/kafkacode"
	"github.com/raftka/raftka/raftfsm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// raftfsm.ErrNotController is the one kind this package cannot name (raftfsm
// imports it); it carries NOT_CONTROLLER itself and must still be itself.
func TestNotController(t *testing.T) {
	err := fmt.Errorf("commit: %w", raftfsm.ErrNotController)
	if got := kafkacode.OfDecision(err); got != kerr.NotController.Code {
		t.Errorf("OfDecision(%v) = %s, want NOT_CONTROLLER", err, kerr.ErrorForCode(got))
	}
	if got := kafkacode.Of(err); got != kerr.NotController.Code {
		t.Errorf("Of(%v) = %s, want NOT_CONTROLLER", err, kerr.ErrorForCode(got))
	}
	if !errors.Is(err, raftfsm.ErrNotController) {
		t.Error("errors.Is no longer finds ErrNotController")
	}
	if raftfsm.ErrNotController.Error() != "raftfsm: not the active controller" {
		t.Errorf("message %q", raftfsm.ErrNotController.Error())
	}
}
