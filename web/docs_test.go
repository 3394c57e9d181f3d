package web_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAPIDocListsEveryRoute keeps docs/api.md in step with routes.go.
func TestAPIDocListsEveryRoute(t *testing.T) {
	src, err := os.ReadFile("routes.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	routes := regexp.MustCompile(`m\.Handle(?:Func)?\("([A-Z]+ [^"]+)"`).FindAllStringSubmatch(string(src), -1)
	if len(routes) < 10 {
		t.Fatalf("found only %d routes in routes.go", len(routes))
	}
	for _, r := range routes {
		if !strings.Contains(string(doc), "`"+r[1]+"`") {
			t.Errorf("docs/api.md does not document %q", r[1])
		}
	}
}

// TestLayoutTablesListEveryPackage keeps the package tables of README.md
// and docs/architecture.md in step with the tree: every directory with
// non-test Go files has a row in each, and every row names one.
func TestLayoutTablesListEveryPackage(t *testing.T) {
	pkgs := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != "..") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			rel, err := filepath.Rel("..", filepath.Dir(path))
			if err != nil {
				return err
			}
			pkgs[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 10 {
		t.Fatalf("found only %d packages", len(pkgs))
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9/]+)` \\|")
	for _, doc := range []string{"../README.md", "../docs/architecture.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rows := map[string]bool{}
		for _, m := range row.FindAllStringSubmatch(string(b), -1) {
			rows[m[1]] = true
		}
		for p := range pkgs {
			if !rows[p] {
				t.Errorf("%s has no row for package %s", doc, p)
			}
		}
		for r := range rows {
			if !pkgs[r] {
				t.Errorf("%s has a row for %s, which is no package", doc, r)
			}
		}
	}
}
