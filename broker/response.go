package broker

import (
	"io"
	"os"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// bodyPart is one piece of an encoded response body: bytes in memory, or a
// region of a file that the writer sends straight from the page cache.
type bodyPart struct {
	bytes []byte

	file   *os.File // nil for a bytes part
	offset int64
	length int64
}

func partBytes(b []byte) bodyPart { return bodyPart{bytes: b} }

func partFile(f *os.File, offset, length int64) bodyPart {
	return bodyPart{file: f, offset: offset, length: length}
}

func (p bodyPart) size() int64 {
	if p.file != nil {
		return p.length
	}
	return int64(len(p.bytes))
}

// filesResponse is a response its handler encoded itself as parts, so that
// record batches go from segment files to the socket without a copy through
// user space (Fetch). The embedded Response supplies the key, version and
// flexibility that select the response header; its AppendTo is never called
// by the writer.
//
// release, if set, runs exactly once after the parts are written or dropped
// (connection closed first), so the handler can pin segment files until then.
type filesResponse struct {
	kmsg.Response
	parts []bodyPart

	releaseOnce sync.Once
	release     func()
}

func newFilesResponse(resp kmsg.Response, release func(), parts ...bodyPart) *filesResponse {
	return &filesResponse{Response: resp, parts: parts, release: release}
}

func (r *filesResponse) bodySize() int64 {
	var n int64
	for _, p := range r.parts {
		n += p.size()
	}
	return n
}

func (r *filesResponse) done() {
	r.releaseOnce.Do(func() {
		if r.release != nil {
			r.release()
		}
	})
}

// writeParts writes prefix followed by parts to w, coalescing adjacent
// in-memory bytes into one write and sending file regions with
// writeFileRange. It returns the bytes written.
func writeParts(w io.Writer, prefix []byte, parts []bodyPart) (int64, error) {
	var total int64
	pending := prefix
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		n, err := w.Write(pending)
		total += int64(n)
		pending = pending[:0]
		return err
	}
	for _, p := range parts {
		if p.file == nil {
			pending = append(pending, p.bytes...)
			continue
		}
		if err := flush(); err != nil {
			return total, err
		}
		n, err := writeFileRange(w, p.file, p.offset, p.length)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, flush()
}

// copyFileRange is the portable path of writeFileRange: a read through a
// section, which never moves f's shared offset.
func copyFileRange(w io.Writer, f *os.File, offset, length int64) (int64, error) {
	n, err := io.Copy(w, io.NewSectionReader(f, offset, length))
	if err == nil && n < length {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}
