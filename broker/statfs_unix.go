//go:build unix

package broker

import "syscall"

// diskSpace returns the total and available bytes of the file system
// holding dir (DescribeLogDirs v4), or -1, -1.
func diskSpace(dir string) (total, usable int64) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1, -1
	}
	bs := int64(st.Bsize)
	return int64(st.Blocks) * bs, int64(st.Bavail) * bs
}
