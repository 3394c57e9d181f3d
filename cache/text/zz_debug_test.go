package text

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestZZDebug(t *testing.T) {
	for _, q := range strings.Split(os.Getenv("QS"), "|") {
		n := Normalize(q)
		fmt.Printf("%q\n  content=%v\n  facets=%v\n", q, Content(n), Facets(n))
	}
}
