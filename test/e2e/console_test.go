package e2e

// The web console on a make run-style cluster (three nodes, console.enable
// on their metrics listeners), loaded by headless Chromium: every page
// renders with the cluster's topics and a group's lag, a hostile group id
// and a record value with HTML in it come out as text, and each page's
// screenshot is saved under the test's temp dir (and copied to
// $RAFTKA_CONSOLE_SCREENSHOTS when set, for deploy/docs/).

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// requireChromium returns the path of Debian's chromium, skipping the test
// without it unless CI=true (.ci/run installs it).
func requireChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found; CI=true requires it (Debian's chromium package, installed by .ci/run)")
	}
	t.Skip("chromium not found: install Debian's chromium package to load the console pages (set CI=true to make its absence a failure)")
	return ""
}

// chromium runs headless Chromium on u with args (--dump-dom,
// --screenshot=...), bounded in time, and returns its stdout.
func chromium(t *testing.T, bin, profile, u string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	all := append([]string{"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--user-data-dir=" + profile,
		"--window-size=1280,900", "--hide-scrollbars"}, args...)
	cmd := exec.CommandContext(ctx, bin, append(all, u)...)
	cmd.Dir = profile
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s %s: %v", strings.Join(args, " "), u, err)
	}
	return string(out)
}

func TestConsoleInChromium(t *testing.T) {
	bin := requireChromium(t)
	const (
		topic        = "console-orders"
		hostileGroup = `<script>alert(1)</script>`
		htmlValue    = `<img src=x onerror=alert(2)><b>bold</b>`
	)
	c := cluster.Start(t, cluster.Nodes(3), cluster.Override("console.enable", "true"))
	ctx := ctxFor(t, 3*time.Minute)
	cl := client(t, c)
	if err := createTopic(ctx, kadm.NewClient(cl), topic, 1, 3); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		v := fmt.Sprintf("order %d", i)
		if i == 4 {
			v = htmlValue
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// The group reads two records and commits: lag 3.
	consumer, err := kgo.NewClient(kgo.SeedBrokers(c.Node(1).ClientAddr()), kgo.ConsumerGroup(hostileGroup), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	var last *kgo.Record
	for read := 0; read < 2; {
		fs := consumer.PollRecords(ctx, 1)
		if ctx.Err() != nil {
			t.Fatal("the group consumed nothing")
		}
		fs.EachRecord(func(r *kgo.Record) {
			if read < 2 {
				last = r
				read++
			}
		})
	}
	if err := consumer.CommitRecords(ctx, last); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	described, err := adm.DescribeGroups(ctx, hostileGroup)
	if err != nil {
		t.Fatal(err)
	}
	coord := c.Node(described[hostileGroup].Coordinator.NodeID)
	base := "http://" + coord.MetricsAddr()

	shots := os.Getenv("RAFTKA_CONSOLE_SCREENSHOTS")
	profile := t.TempDir()
	dir := t.TempDir()
	for _, pg := range []struct {
		name, path string
		want       []string
	}{
		{"overview", "/", []string{"Cluster " + c.ClusterID(), "Healthy", "Metadata quorum", "Brokers"}},
		{"topics", "/topics", []string{topic, "__consumer_offsets"}},
		{"topic", "/topics/" + topic, []string{"Topic " + topic, "order 0", "k3", "&lt;img src=x onerror=alert(2)&gt;&lt;b&gt;bold&lt;/b&gt;"}},
		{"groups", "/groups", []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "Stable"}},
		{"group", "/groups/" + url.PathEscape(hostileGroup), []string{"Group &lt;script&gt;alert(1)&lt;/script&gt;", "Lag per partition", ">3<"}},
		{"broker", fmt.Sprintf("/brokers/%d", coord.ID()), []string{fmt.Sprintf("Broker %d", coord.ID()), "Log directories", "Fetch", "OffsetCommit"}},
	} {
		var dom string
		// Lag and state settle within a heartbeat or two of the commit.
		cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
			dom = chromium(t, bin, profile, base+pg.path, "--dump-dom")
			for _, w := range pg.want {
				if !strings.Contains(dom, w) {
					return false, fmt.Sprintf("%s page lacks %q:\n%s", pg.name, w, dom)
				}
			}
			return true, ""
		})
		// An injected element would serialize as one: <script>, or an
		// <img> with its onerror attribute quoted by the DOM.
		for _, bad := range []string{"<script", `onerror="`, "<b>bold"} {
			if strings.Contains(dom, bad) {
				t.Errorf("%s page has %q unescaped in its DOM", pg.name, bad)
			}
		}
		png := filepath.Join(dir, pg.name+".png")
		chromium(t, bin, profile, base+pg.path, "--screenshot="+png)
		if st, err := os.Stat(png); err != nil || st.Size() < 1000 {
			t.Fatalf("screenshot of %s: %v", pg.name, err)
		}
		if shots != "" {
			b, _ := os.ReadFile(png)
			if err := os.WriteFile(filepath.Join(shots, "console-"+pg.name+".png"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("screenshots in %s", dir)
}
