//go:build !unix

package broker

// diskSpace is unknown off Unix: DescribeLogDirs v4 answers -1.
func diskSpace(string) (total, usable int64) { return -1, -1 }
