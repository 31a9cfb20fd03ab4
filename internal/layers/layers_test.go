// Package layers checks the module's import graph: dependencies run one
// way, engine <- journal <- core <- edge <- cmd (docs/DESIGN.md), replica
// (raft, beside the journal) under core only, and the tools and the
// benchmarks read the data directory and the config without the runtime
// or the REST edge.
package layers

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/weexcore/exchange/"

// allowed lists, for each package (or package prefix ending in "/"), the
// module packages it may import (prefixes ending in "/" match a tree).
// Test files are not checked.
var allowed = map[string][]string{
	"engine":            {"engine/"},
	"engine/":           {"engine"},
	"internal/walio":    {},
	"internal/affinity": {},
	"internal/layers":   {},
	"config":            {"engine"},
	"journal":           {"engine", "internal/walio"},
	"core":              {"engine", "journal", "replica"},
	"edge":              {"engine", "config", "journal", "core"},
	"cmd/exchanged":     {"engine", "config", "journal", "core", "edge", "internal/walio", "internal/affinity"},
	"tools/audit":       {"engine", "journal"},
	"replica":           {},
	"bench/load":        {},
	"bench/report":      {},
	"bench/suite":       {"bench/load", "bench/report", "config", "engine"},
	"bench/cmd/":        {"bench/", "internal/affinity"},
}

func rule(pkg string) ([]string, bool) {
	if r, ok := allowed[pkg]; ok {
		return r, true
	}
	for p, r := range allowed {
		if strings.HasSuffix(p, "/") && strings.HasPrefix(pkg, p) {
			return r, true
		}
	}
	return nil, false
}

func permitted(imp string, r []string) bool {
	for _, a := range r {
		if imp == a || strings.HasSuffix(a, "/") && strings.HasPrefix(imp, a) {
			return true
		}
	}
	return false
}

func TestImportGraph(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], module)
		r, ok := rule(pkg)
		if !ok {
			t.Errorf("package %s has no rule here: add one", pkg)
			continue
		}
		seen++
		for _, imp := range f[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			imp = strings.TrimPrefix(imp, module)
			if !permitted(imp, r) {
				t.Errorf("%s imports %s: against the layering (allowed: %v)", pkg, imp, r)
			}
		}
	}
	if seen < 10 {
		t.Fatalf("checked %d packages: go list found too few", seen)
	}
}
