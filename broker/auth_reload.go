package broker

import (
	"crypto/tls"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftka/raftka/broker/config"
	"github.com/rs/zerolog"
)

// Certificate rotation: a TLS listener's keystore and truststore files
// (ssl.keystore.location, ssl.truststore.location) are watched by their
// modification time and size, checked at most every reloadCheckInterval
// when a handshake needs the configuration. When either changed, the TLS
// configuration is built again from the files; new handshakes use it, open
// connections keep the certificates they were made with. A file that does
// not load (caught half-written, a wrong password) is logged and the
// previous configuration kept, and it is tried again at the next check.
// Inline PEM (ssl.keystore.certificate.chain, ...) has no file and never
// changes. The same applies to the broker's outgoing connections (the
// inter-broker and controller dialers), whose client certificate and
// truststore come from the same keys.

// reloadCheckInterval bounds how often the files are stat'ed (nanoseconds);
// a variable so tests need not wait.
var reloadCheckInterval atomic.Int64

func init() { reloadCheckInterval.Store(int64(time.Second)) }

// fileStamp is what tells a changed file: its modification time and size
// (a missing file has neither).
type fileStamp struct {
	mod  time.Time
	size int64
	ok   bool
}

func stampFiles(paths []string) []fileStamp {
	out := make([]fileStamp, len(paths))
	for i, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			out[i] = fileStamp{mod: fi.ModTime(), size: fi.Size(), ok: true}
		}
	}
	return out
}

// tlsReloader keeps a TLS configuration built from files current.
type tlsReloader struct {
	build func() (*tls.Config, error)
	files []string
	log   zerolog.Logger

	mu      sync.Mutex
	cur     *tls.Config
	stamps  []fileStamp
	checked time.Time
	failed  []fileStamp // the stamps of the last build that failed, logged once
}

// tlsFiles are the files a listener's TLS configuration is read from.
func tlsFiles(s *config.ListenerSecurity) []string {
	var out []string
	if s.KeystoreLocation != "" && s.KeystoreCertificateChain == "" {
		out = append(out, s.KeystoreLocation)
	}
	if s.TruststoreLocation != "" {
		out = append(out, s.TruststoreLocation)
	}
	return out
}

// newTLSReloader builds the configuration once (an error is the caller's:
// a listener whose files do not load does not start) and returns the
// reloader, or nil when there is no file to watch.
func newTLSReloader(files []string, build func() (*tls.Config, error), log zerolog.Logger) (*tlsReloader, *tls.Config, error) {
	stamps := stampFiles(files)
	tc, err := build()
	if err != nil || len(files) == 0 {
		return nil, tc, err
	}
	return &tlsReloader{build: build, files: files, log: log, cur: tc, stamps: stamps, checked: time.Now()}, tc, nil
}

// current returns the configuration, built again first when a file changed.
func (r *tlsReloader) current() *tls.Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if now.Sub(r.checked) < time.Duration(reloadCheckInterval.Load()) {
		return r.cur
	}
	r.checked = now
	st := stampFiles(r.files)
	if slices.Equal(st, r.stamps) {
		return r.cur
	}
	tc, err := r.build()
	if err != nil {
		if !slices.Equal(st, r.failed) {
			r.failed = st
			r.log.Error().Err(err).Strs("files", r.files).Msg("TLS files changed but do not load; new connections keep the previous certificates")
		}
		return r.cur
	}
	r.cur, r.stamps, r.failed = tc, st, nil
	r.log.Info().Strs("files", r.files).Msg("TLS files changed: new connections use the reloaded certificates")
	return r.cur
}

// serverConfig is the server-side configuration that asks the reloader at
// every handshake.
func (r *tlsReloader) serverConfig() *tls.Config {
	return &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return r.current(), nil }}
}
