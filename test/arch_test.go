package test

import (
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/raftka/raftka"

type goPackage struct {
	ImportPath string
	Dir        string
	Imports    []string
	GoFiles    []string
}

// listPackages asks the go tool for every package of the module and its
// direct imports (tests excluded: test helpers may cross boundaries).
func listPackages(t *testing.T) []goPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	cmd.Dir = ".."
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pkgs []goPackage
	dec := json.NewDecoder(out)
	for {
		var p goPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	return pkgs
}

// The import rules live in each package's doc.go, beside the prose that
// explains them, as two directive comments (go doc hides directives):
//
//	//arch:imports  PATTERN...   what the package's non-test files may import
//	//arch:importers PATTERN...  who may import it (absent: anyone may)
//
// A PATTERN is "std" (the standard library), "none", a path inside the module
// ("metadata", "broker/kafkacode") or outside it ("github.com/rs/zerolog"),
// and a trailing "/..." also matches everything below the path. A package
// may always import its own subpackages' names only where its doc.go lists
// them, so a new edge between our packages is always a visible doc change.
type rules struct {
	imports   []string
	importers []string // nil: anyone
}

const (
	importsDirective   = "//arch:imports"
	importersDirective = "//arch:importers"
)

// readRules parses a doc.go's directives.
func readRules(src string) (rules, error) {
	var r rules
	seenImports := false
	for _, line := range strings.Split(src, "\n") {
		line = strings.TrimSpace(line)
		var dst *[]string
		switch {
		case strings.HasPrefix(line, importsDirective+" "):
			dst, seenImports = &r.imports, true
			line = strings.TrimPrefix(line, importsDirective)
		case strings.HasPrefix(line, importersDirective+" "):
			dst = &r.importers
			line = strings.TrimPrefix(line, importersDirective)
		default:
			continue
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			return r, fmt.Errorf("empty directive")
		}
		if *dst == nil {
			*dst = []string{}
		}
		*dst = append(*dst, fields...)
	}
	if !seenImports {
		return r, fmt.Errorf("no %s directive", importsDirective)
	}
	return r, nil
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// matches reports whether an import path fits a pattern.
func matches(path, pattern string) bool {
	switch pattern {
	case "none":
		return false
	case "std":
		return isStd(path)
	}
	full := pattern
	if isStd(pattern) { // a module-relative path: no dot in its first element
		full = module + "/" + pattern
	}
	if base, ok := strings.CutSuffix(full, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == full
}

func matchesAny(path string, patterns []string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(path, p) })
}

// violations checks every package's imports against every doc.go's rules.
func violations(pkgs []goPackage, ruleOf map[string]rules) []string {
	var out []string
	for _, p := range pkgs {
		r, ok := ruleOf[p.ImportPath]
		if !ok {
			continue // reported as a missing or unreadable doc.go
		}
		for _, imp := range p.Imports {
			if !matchesAny(imp, r.imports) {
				out = append(out, fmt.Sprintf("%s imports %s, which its doc.go (%s) does not allow",
					p.ImportPath, imp, importsDirective))
			}
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if tr, ok := ruleOf[imp]; ok && tr.importers != nil && !matchesAny(p.ImportPath, tr.importers) {
				out = append(out, fmt.Sprintf("%s imports %s, whose doc.go (%s) does not allow it",
					p.ImportPath, imp, importersDirective))
			}
		}
	}
	return out
}

// TestImportRules holds every package to the import rules its doc.go states:
// each package has a doc.go with the directives, and no import edge of the
// module's non-test code breaks one.
func TestImportRules(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) == 0 {
		t.Fatal("go list returned no packages")
	}
	ruleOf := map[string]rules{}
	for _, p := range pkgs {
		if !slices.Contains(p.GoFiles, "doc.go") {
			t.Errorf("%s has no doc.go saying what it owns and may import", p.ImportPath)
			continue
		}
		name := filepath.Join(p.Dir, "doc.go")
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc == nil {
			t.Errorf("%s: doc.go has no package comment", p.ImportPath)
			continue
		}
		var src strings.Builder
		for _, c := range f.Doc.List {
			src.WriteString(c.Text + "\n")
		}
		r, err := readRules(src.String())
		if err != nil {
			t.Errorf("%s: doc.go: %v", p.ImportPath, err)
			continue
		}
		ruleOf[p.ImportPath] = r
	}
	for _, v := range violations(pkgs, ruleOf) {
		t.Error(v)
	}
}

// TestImportRulesCheck shows the checker can fail: a table of small module
// graphs with the verdict each must get.
func TestImportRulesCheck(t *testing.T) {
	m := func(rel string) string { return module + "/" + rel }
	storage := rules{imports: []string{"std", "github.com/klauspost/compress/..."}}
	cases := []struct {
		name    string
		pkgs    []goPackage
		ruleOf  map[string]rules
		wantBad int
	}{
		{"allowed std and library", []goPackage{{ImportPath: m("storage"), Imports: []string{"os", "github.com/klauspost/compress/zstd"}}},
			map[string]rules{m("storage"): storage}, 0},
		{"forbidden library", []goPackage{{ImportPath: m("storage"), Imports: []string{"github.com/rs/zerolog"}}},
			map[string]rules{m("storage"): storage}, 1},
		{"forbidden module package", []goPackage{{ImportPath: m("storage"), Imports: []string{m("metadata")}}},
			map[string]rules{m("storage"): storage, m("metadata"): {imports: []string{"std"}}}, 1},
		{"subtree pattern", []goPackage{{ImportPath: m("cmd/raftka"), Imports: []string{m("broker/replica")}}},
			map[string]rules{m("cmd/raftka"): {imports: []string{"broker/..."}}}, 0},
		{"subtree pattern is not a name prefix", []goPackage{{ImportPath: m("x"), Imports: []string{m("brokerx")}}},
			map[string]rules{m("x"): {imports: []string{"broker/..."}}}, 1},
		{"importers refuse", []goPackage{{ImportPath: m("storage"), Imports: []string{m("cmd/raftka")}}},
			map[string]rules{m("storage"): {imports: []string{"cmd/..."}}, m("cmd/raftka"): {imports: []string{"std"}, importers: []string{"none"}}}, 1},
		{"importers allow", []goPackage{{ImportPath: m("cmd/raftka"), Imports: []string{m("broker")}}},
			map[string]rules{m("cmd/raftka"): {imports: []string{"broker"}}, m("broker"): {imports: []string{"std"}, importers: []string{"cmd/..."}}}, 0},
	}
	for _, c := range cases {
		if got := violations(c.pkgs, c.ruleOf); len(got) != c.wantBad {
			t.Errorf("%s: %d violations %q, want %d", c.name, len(got), got, c.wantBad)
		}
	}
}

func TestReadRules(t *testing.T) {
	r, err := readRules("// Package x.\n//\n//arch:imports std metadata\n//arch:imports github.com/rs/zerolog\n//arch:importers cmd/...\n")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.imports, []string{"std", "metadata", "github.com/rs/zerolog"}) || !slices.Equal(r.importers, []string{"cmd/..."}) {
		t.Errorf("got %+v", r)
	}
	if _, err := readRules("// Package x.\n"); err == nil {
		t.Error("a doc.go without the imports directive must be refused")
	}
	if _, err := readRules("//arch:imports \n"); err == nil {
		t.Error("an empty directive must be refused")
	}
	if r, _ := readRules("//arch:imports std\n"); r.importers != nil {
		t.Error("no importers directive means anyone may import")
	}
}
