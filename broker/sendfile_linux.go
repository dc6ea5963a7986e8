package broker

import (
	"errors"
	"io"
	"os"
	"sync/atomic"
	"syscall"
)

// sendfileBytes counts bytes sent with sendfile(2); tests read it to prove
// the zero-copy path ran rather than the copying fallback.
var sendfileBytes atomic.Int64

// writeFileRange writes length bytes of f from offset to w. When w is a
// socket it uses sendfile(2) with an explicit offset: the bytes never enter
// user space and f's shared file position is left alone, which matters
// because many connections read the same segment file at once. (Go's own
// io.Copy into a *net.TCPConn uses sendfile only for an *os.File read from its
// current position, and falls back to a user-space copy for an
// io.SectionReader.) Anything else, or a file system without sendfile
// support, takes the copying path.
func writeFileRange(w io.Writer, f *os.File, offset, length int64) (int64, error) {
	if length <= 0 {
		return 0, nil
	}
	sc, ok := w.(syscall.Conn)
	if !ok {
		return copyFileRange(w, f, offset, length)
	}
	dst, err := sc.SyscallConn()
	if err != nil {
		return copyFileRange(w, f, offset, length)
	}
	src, err := f.SyscallConn()
	if err != nil {
		return copyFileRange(w, f, offset, length)
	}

	var (
		written     int64
		sendErr     error
		unsupported bool
	)
	ctlErr := src.Control(func(sfd uintptr) {
		// Write waits for the socket to be writable whenever the callback
		// returns false, so EAGAIN needs no loop of our own.
		wErr := dst.Write(func(dfd uintptr) bool {
			for written < length {
				off := offset + written
				chunk := min(length-written, 1<<30)
				n, err := syscall.Sendfile(int(dfd), int(sfd), &off, int(chunk))
				if n > 0 {
					written += int64(n)
					sendfileBytes.Add(int64(n))
				}
				switch {
				case err == syscall.EAGAIN:
					return false
				case err == syscall.EINTR:
				case errors.Is(err, syscall.EINVAL), errors.Is(err, syscall.ENOSYS), errors.Is(err, syscall.EOPNOTSUPP):
					unsupported = true
					return true
				case err != nil:
					sendErr = err
					return true
				case n == 0:
					sendErr = io.ErrUnexpectedEOF // file shorter than the region
					return true
				}
			}
			return true
		})
		if sendErr == nil {
			sendErr = wErr
		}
	})
	if ctlErr != nil && sendErr == nil {
		sendErr = ctlErr
	}
	if unsupported && sendErr == nil {
		n, err := copyFileRange(w, f, offset+written, length-written)
		return written + n, err
	}
	return written, sendErr
}
