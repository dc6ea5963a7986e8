//go:build !linux

package broker

import (
	"io"
	"os"
	"sync/atomic"
)

// sendfileBytes stays zero where the zero-copy path is not built.
var sendfileBytes atomic.Int64

// writeFileRange writes length bytes of f from offset to w by copying; the
// sendfile path is Linux-only.
func writeFileRange(w io.Writer, f *os.File, offset, length int64) (int64, error) {
	if length <= 0 {
		return 0, nil
	}
	return copyFileRange(w, f, offset, length)
}
