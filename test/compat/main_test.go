package compat

import (
	"testing"

	"github.com/raftka/raftka/test/cluster"
)

func TestMain(m *testing.M) { cluster.Main(m) }
