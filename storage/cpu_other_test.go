//go:build !unix

package storage

import (
	"testing"
	"time"
)

// processCPU is not measured here: cpu-ms/MiB reads 0.
func processCPU(*testing.B) time.Duration { return 0 }
