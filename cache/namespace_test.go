package cache_test

import (
	"testing"

	"github.com/sluice-dev/sluice/cache"
)

func TestNamespaceString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ns   cache.Namespace
		want string
	}{
		{cache.Namespace{Namespace: "wms-prod", Model: "sim-1"}, "wms-prod@sim-1"},
		{cache.Namespace{Tenant: "acme", Namespace: "wms-prod", Model: "sim-1"}, "acme/wms-prod@sim-1"},
		{cache.Namespace{Model: "gpt-4o"}, "default@gpt-4o"},
		{cache.Namespace{Tenant: "a/b@c", Namespace: "n", Model: "m@x/y"}, "a%2Fb%40c/n@m%40x%2Fy"},
	} {
		if got := tc.ns.String(); got != tc.want {
			t.Errorf("%+v.String() = %q; want %q", tc.ns, got, tc.want)
		}
	}
	// Parts that would forge each other's separators stay apart.
	a := cache.Namespace{Tenant: "t", Namespace: "n", Model: "m/x"}
	b := cache.Namespace{Tenant: "t/n@m", Namespace: "x", Model: ""}
	if a.String() == b.String() || cache.ExactKey(a, "q") == cache.ExactKey(b, "q") {
		t.Errorf("%+v and %+v share a namespace string %q", a, b, a.String())
	}
	if k := cache.ExactKey(a, "q"); len(k) != 64 {
		t.Errorf("ExactKey length %d; want 64 hex digits", len(k))
	}
}
