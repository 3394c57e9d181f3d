package web_test

import (
	"os"
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
