package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// requirePromtool returns promtool's path. Without it the test is skipped,
// unless CI=true, where .ci/run installs Debian's prometheus package and a
// missing promtool is a broken runner.
func requirePromtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("promtool not found (%v); CI=true requires it (Debian's prometheus package, installed by .ci/run)", err)
	}
	t.Skipf("promtool not found (%v): install Debian's prometheus package to check deploy/prometheus (set CI=true to make its absence a failure)", err)
	return ""
}

// The alert rules load in Prometheus and behave as their unit tests say:
// URP fires after 5 minutes and not before, offline and under-min-ISR
// partitions, no active controller (also with nothing scraped), lag growth
// for one group and not for a steady one.
func TestPrometheusRules(t *testing.T) {
	promtool := requirePromtool(t)
	for _, args := range [][]string{
		{"check", "rules", "raftka-alerts.yml"},
		{"test", "rules", "raftka-alerts_test.yml"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, promtool, args...)
		cmd.Dir = "prometheus"
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	checkDashboardQueries(t, promtool)
}

// checkDashboardQueries has promtool parse every dashboard query, as the
// expression of a recording rule in a file of its own, with Grafana's
// variables replaced by values.
func checkDashboardQueries(t *testing.T, promtool string) {
	t.Helper()
	var d struct {
		Panels []grafanaPanel `json:"panels"`
	}
	b, err := os.ReadFile("grafana/raftka.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	vars := strings.NewReplacer("$__rate_interval", "5m", "$job", ".*")
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	n := 0
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			n++
			expr, _ := json.Marshal(vars.Replace(q.Expr)) // a JSON string is a YAML string
			fmt.Fprintf(&rules, "      - record: dashboard:query%d\n        expr: %s\n", n, expr)
		}
	}
	path := filepath.Join(t.TempDir(), "dashboard-queries.yml")
	if err := os.WriteFile(path, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, promtool, "check", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("the dashboard's %d queries do not all parse: %v\n%s", n, err, out)
	}
}

type grafanaPanel struct {
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	ID         int            `json:"id"`
	Datasource map[string]any `json:"datasource"`
	GridPos    struct{ H, W, X, Y int }
	Targets    []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
}

// The dashboard is importable (Grafana's JSON model: an input for the data
// source, unique panel ids, panels inside the 24-column grid, every graph
// with a query) and has the sections an operator looks for.
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile("grafana/raftka.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string         `json:"title"`
		UID    string         `json:"uid"`
		Inputs []any          `json:"__inputs"`
		Panels []grafanaPanel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.Title == "" || d.UID == "" || len(d.Inputs) == 0 {
		t.Errorf("title %q, uid %q, %d inputs", d.Title, d.UID, len(d.Inputs))
	}
	ids := map[int]bool{}
	var rows []string
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.X < 0 || p.GridPos.W <= 0 || p.GridPos.X+p.GridPos.W > 24 || p.GridPos.H <= 0 {
			t.Errorf("panel %q outside the grid: %+v", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			rows = append(rows, p.Title)
			continue
		}
		if len(p.Targets) == 0 || p.Datasource == nil {
			t.Errorf("panel %q has no query or no data source", p.Title)
		}
		for _, q := range p.Targets {
			if strings.TrimSpace(q.Expr) == "" || q.RefID == "" {
				t.Errorf("panel %q has an empty query", p.Title)
			}
			if strings.Count(q.Expr, "(") != strings.Count(q.Expr, ")") {
				t.Errorf("panel %q: unbalanced parentheses in %s", p.Title, q.Expr)
			}
		}
	}
	for _, want := range []string{"Cluster health", "Throughput", "Latency", "Replication", "Metadata quorum", "Consumer groups and lag"} {
		found := false
		for _, r := range rows {
			found = found || r == want
		}
		if !found {
			t.Errorf("no %q row; rows: %v", want, rows)
		}
	}
}
