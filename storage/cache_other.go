//go:build !linux

package storage

import "os"

// dropCache does nothing where raftka has no POSIX_FADV_DONTNEED wired up:
// follower data then stays in the page cache, as it does in Kafka.
func dropCache(*os.File, int64, int64) {}
