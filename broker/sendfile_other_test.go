//go:build !linux

package broker

import "testing"

func checkSendfileUsed(*testing.T, int64, int64) {}
