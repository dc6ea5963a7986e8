package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raftka/raftka/storage"
)

// writeNodeConfig writes a combined-mode config with two log dirs and a
// separate metadata dir under root.
func writeNodeConfig(t *testing.T, root string, nodeID int) string {
	t.Helper()
	text := fmt.Sprintf(`process.roles=broker,controller
node.id=%d
controller.quorum.voters=%d@127.0.0.1:19093
listeners=PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093
controller.listener.names=CONTROLLER
log.dirs=%s,%s
metadata.log.dir=%s
num.io.threads=8
`, nodeID, nodeID, filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "meta"))
	path := filepath.Join(root, "server.properties")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func runApp(args ...string) (string, error) {
	app := newApp()
	var out bytes.Buffer
	app.Writer = &out
	app.ErrWriter = &out
	err := app.Run(append([]string{"raftka", "--log-level", "error"}, args...))
	return out.String(), err
}

func TestStorageRandomUUID(t *testing.T) {
	out, err := runApp("storage", "random-uuid")
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(out)
	if _, err := storage.ParseUUID(id); err != nil || strings.HasPrefix(id, "-") {
		t.Fatalf("random-uuid printed %q: %v", out, err)
	}
	again, _ := runApp("storage", "random-uuid")
	if strings.TrimSpace(again) == id {
		t.Fatal("two runs printed the same id")
	}
}

func TestStorageFormat(t *testing.T) {
	root := t.TempDir()
	cfg := writeNodeConfig(t, root, 2)
	cluster := storage.RandomUUID().String()

	out, err := runApp("storage", "format", "--config", cfg, "--cluster-id", cluster)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	dirs := []string{filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "meta")}
	metas, err := storage.CheckDirs(dirs, cluster, 2)
	if err != nil {
		t.Fatalf("after format: %v", err)
	}
	if metas[0].DirectoryID == "" || metas[0].DirectoryID == metas[1].DirectoryID {
		t.Errorf("directory ids %+v", metas)
	}
	if strings.Count(out, "Formatted ") != 3 {
		t.Errorf("output %q", out)
	}

	// Formatting again is refused, unless told to skip dirs with the same ids.
	if _, err := runApp("storage", "format", "--config", cfg, "--cluster-id", cluster); err == nil || !strings.Contains(err.Error(), "--ignore-formatted") {
		t.Errorf("second format: %v", err)
	}
	out, err = runApp("storage", "format", "--config", cfg, "--cluster-id", cluster, "--ignore-formatted")
	if err != nil || !strings.Contains(out, "already formatted") {
		t.Errorf("--ignore-formatted: %v %q", err, out)
	}
	other := storage.RandomUUID().String()
	if _, err := runApp("storage", "format", "--config", cfg, "--cluster-id", other, "--ignore-formatted"); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("other cluster id: %v", err)
	}
	if _, err := runApp("storage", "format", "--config", cfg, "--cluster-id", cluster, "--ignore-formatted", "--override", "node.id=5", "--override", "controller.quorum.voters=5@127.0.0.1:19093"); err == nil || !strings.Contains(err.Error(), "node.id 2") {
		t.Errorf("other node id: %v", err)
	}

	// A new dir among formatted ones is formatted, the others are skipped.
	if err := os.RemoveAll(filepath.Join(root, "b")); err != nil {
		t.Fatal(err)
	}
	out, err = runApp("storage", "format", "--config", cfg, "--cluster-id", cluster, "--ignore-formatted")
	if err != nil || strings.Count(out, "Formatted ") != 1 || strings.Count(out, "Skipping ") != 2 {
		t.Errorf("partial format: %v %q", err, out)
	}
	if _, err := storage.CheckDirs(dirs, cluster, 2); err != nil {
		t.Error(err)
	}
}

func TestStorageFormatOverrides(t *testing.T) {
	root := t.TempDir()
	cfg := writeNodeConfig(t, root, 1)
	cluster := storage.RandomUUID().String()
	dir := filepath.Join(root, "x")
	// The comma inside the value must survive flag parsing.
	_, err := runApp("storage", "format", "--config", cfg, "--cluster-id", cluster,
		"--override", "log.dirs="+dir+","+filepath.Join(root, "y"), "--override", "metadata.log.dir="+dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storage.CheckDirs([]string{dir, filepath.Join(root, "y")}, cluster, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "a")); !os.IsNotExist(err) {
		t.Errorf("overridden dir a was touched: %v", err)
	}
	// The overrides of one run do not leak into the next.
	if _, err := runApp("storage", "format", "--config", cfg, "--cluster-id", cluster); err != nil {
		t.Fatal(err)
	}
	if _, err := storage.CheckDirs([]string{filepath.Join(root, "a")}, cluster, 1); err != nil {
		t.Error(err)
	}
}

func TestStorageFormatErrors(t *testing.T) {
	root := t.TempDir()
	cfg := writeNodeConfig(t, root, 1)
	cluster := storage.RandomUUID().String()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--config", cfg, "--cluster-id", "not-a-uuid"}, `--cluster-id "not-a-uuid"`},
		{[]string{"--config", cfg, "--cluster-id", "AAAAAAAAAAAAAAAAAAAAA!"}, "base64url"},
		{[]string{"--config", filepath.Join(root, "missing.properties"), "--cluster-id", cluster}, "missing.properties"},
		{[]string{"--config", cfg, "--cluster-id", cluster, "--override", "num.partitions=zero"}, `num.partitions="zero"`},
		{[]string{"--config", cfg, "--cluster-id", cluster, "--override", "nokey"}, "want key=value"},
		{[]string{"--cluster-id", cluster}, "config"},
	}
	for _, c := range cases {
		_, err := runApp(append([]string{"storage", "format"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want %q", c.args, err, c.want)
		}
	}
	for _, d := range []string{"a", "b", "meta"} {
		if _, err := os.Stat(filepath.Join(root, d)); !os.IsNotExist(err) {
			t.Errorf("a refused format created %s", d)
		}
	}
}
