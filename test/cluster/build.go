package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

var (
	mainCalled atomic.Bool
	build      struct {
		once sync.Once
		dir  string
		path string
		err  error
	}
)

// Main runs the package's tests, removes the binary built for them, and
// fails the run if goroutines leaked (the harness starts some per process;
// every one must end when its test does). Call it from TestMain.
func Main(m *testing.M) {
	mainCalled.Store(true)
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	for _, d := range revDirs {
		os.RemoveAll(d)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "test/cluster: leaked goroutines:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// Binary returns the path of the raftka binary, building it on first use
// (with -race when the tests run with -race). RAFTKA_BIN names a prebuilt
// binary to use instead.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("RAFTKA_BIN"); p != "" {
		return p
	}
	if !mainCalled.Load() {
		t.Fatal("test/cluster: call cluster.Main(m) from TestMain; it removes the built binary afterwards")
	}
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "raftka-test-bin-")
		if build.err != nil {
			return
		}
		path := filepath.Join(build.dir, "raftka")
		args := []string{"build", "-o", path}
		if raceEnabled {
			args = append(args, "-race")
		}
		args = append(args, "github.com/raftka/raftka/cmd/raftka")
		goTool, err := goTool()
		if err != nil {
			build.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, goTool, args...).CombinedOutput()
		if err != nil {
			build.err = fmt.Errorf("go %v: %v\n%s", args, err, out)
			return
		}
		build.path = path
	})
	if build.err != nil {
		t.Fatalf("test/cluster: building raftka: %v", build.err)
	}
	return build.path
}

func goTool() (string, error) {
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p, nil
		}
	}
	p, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("no go tool on PATH or in GOROOT: %v", err)
	}
	return p, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Run runs the raftka binary with args to completion (for CLI commands
// such as storage format or topics) and returns its combined output.
func Run(t testing.TB, args ...string) (string, error) {
	t.Helper()
	return RunBinary(t, Binary(t), args...)
}

// RunBinary is Run with the raftka binary at bin.
func RunBinary(t testing.TB, bin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	cmd.SysProcAttr = sysProcAttr()
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out), fmt.Errorf("raftka %v: timed out after a minute: %w", args, err)
	}
	if err != nil {
		return string(out), fmt.Errorf("raftka %v: %w", args, err)
	}
	return string(out), nil
}

var revisions struct {
	mu    sync.Mutex
	built map[string]string
}

// BuildRevision returns a raftka binary built from git revision rev of this
// repository, for upgrade tests: bin/raftka-<rev> at the repository's top
// if `make build-previous REV=<rev>` made it, else built here from `git
// archive` into a temporary directory (once per test binary; removed by
// Main). It skips the test, or fails it under CI=true, when this tree is
// not a git checkout holding rev.
func BuildRevision(t testing.TB, rev string) string {
	t.Helper()
	if !mainCalled.Load() {
		t.Fatal("test/cluster: call cluster.Main(m) from TestMain; it removes the built binaries afterwards")
	}
	skip := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		skip("test/cluster: not a git checkout (git rev-parse: %v): no revision %s to build", err, rev)
	}
	root := strings.TrimSpace(string(top))
	if err := exec.Command("git", "-C", root, "cat-file", "-e", rev+"^{commit}").Run(); err != nil {
		skip("test/cluster: this checkout has no commit %s (a shallow clone?): %v", rev, err)
	}
	if p := filepath.Join(root, "bin", "raftka-"+rev); fileExists(p) {
		return p
	}
	revisions.mu.Lock()
	defer revisions.mu.Unlock()
	if p, ok := revisions.built[rev]; ok {
		return p
	}
	dir, err := os.MkdirTemp("", "raftka-rev-")
	if err != nil {
		t.Fatal(err)
	}
	revDirs = append(revDirs, dir)
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	goTool, err := goTool()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	script := `git -C "$1" archive "$2" | tar -x -C "$3" && cd "$3" && CGO_ENABLED=0 "$4" build -trimpath -o "$5" ./cmd/raftka`
	bin := filepath.Join(dir, "raftka-"+rev)
	out, err := exec.CommandContext(ctx, "sh", "-c", script, "sh", root, rev, src, goTool, bin).CombinedOutput()
	if err != nil {
		t.Fatalf("test/cluster: building revision %s: %v\n%s", rev, err, out)
	}
	if revisions.built == nil {
		revisions.built = map[string]string{}
	}
	revisions.built[rev] = bin
	return bin
}

// revDirs are BuildRevision's directories, removed by Main.
var revDirs []string
