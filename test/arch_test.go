package test

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/raftka/raftka"

type goPackage struct {
	ImportPath string
	Imports    []string
	Standard   bool
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

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func under(path, pkg string) bool {
	p := module + "/" + pkg
	return path == p || strings.HasPrefix(path, p+"/")
}

// TestImportBoundaries holds the package layering of ARCHITECTURE.md: imports
// point downward only, and metadata and storage stay free of our other
// packages (metadata of everything outside the standard library).
func TestImportBoundaries(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) == 0 {
		t.Fatal("go list returned no packages")
	}
	for _, p := range pkgs {
		for _, imp := range p.Imports {
			var why string
			switch {
			case under(imp, "cmd") || under(imp, "test"):
				why = "nothing imports cmd or test"
			case under(p.ImportPath, "metadata") && !isStd(imp) && !under(imp, "metadata"):
				why = "metadata imports the standard library only"
			case under(p.ImportPath, "storage") && (under(imp, "metadata") || under(imp, "raftfsm") || under(imp, "broker")):
				why = "storage imports none of metadata, raftfsm, broker"
			case under(p.ImportPath, "storage") && (strings.Contains(imp, "/kerr") || strings.Contains(imp, "zerolog")):
				why = "storage returns errors; it neither maps Kafka codes nor logs"
			case under(p.ImportPath, "raftfsm") && (under(imp, "storage") || under(imp, "broker")):
				why = "raftfsm imports neither storage nor broker"
			case under(p.ImportPath, "broker") && p.ImportPath != module+"/broker" && imp == module+"/broker":
				why = "broker's subpackages never import the root broker package"
			}
			if why != "" {
				t.Errorf("%s imports %s: %s", p.ImportPath, imp, why)
			}
		}
	}
}

func TestUnderAndStd(t *testing.T) {
	cases := []struct {
		path, pkg string
		want      bool
	}{
		{module + "/broker", "broker", true},
		{module + "/broker/replica", "broker", true},
		{module + "/brokerx", "broker", false},
		{module + "/storage", "broker", false},
	}
	for _, c := range cases {
		if got := under(c.path, c.pkg); got != c.want {
			t.Errorf("under(%q, %q) = %v", c.path, c.pkg, got)
		}
	}
	if !isStd("encoding/json") || isStd("github.com/x/y") {
		t.Error("isStd misclassifies")
	}
}
