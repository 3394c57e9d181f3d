package cache_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sluice-dev/sluice/cache"
)

var benchWords = []string{
	"kafka", "postgres", "nginx", "grpc", "tls", "docker", "kubernetes", "ingress", "webhook", "cron",
	"prometheus", "grafana", "jaeger", "etcd", "consul", "vault", "terraform", "ansible", "helm", "istio",
	"mysql", "sqlite", "mongodb", "rabbitmq", "nats", "envoy", "haproxy", "traefik", "caddy", "minio",
}

// benchQuestion returns the i-th synthetic question: varied templates,
// identifiers, zones, dates and free words, in English and Chinese.
func benchQuestion(r *rand.Rand, i int) string {
	w := func() string { return benchWords[r.IntN(len(benchWords))] }
	switch i % 6 {
	case 0:
		return fmt.Sprintf("How many units of SKU-%05d are left in zone %c?", r.IntN(100000), 'A'+r.IntN(8))
	case 1:
		return fmt.Sprintf("帮我查一下 %c 区还有多少件 SKU-%05d", 'A'+r.IntN(8), r.IntN(100000))
	case 2:
		return fmt.Sprintf("What is the status of outbound order OB-%05d?", r.IntN(100000))
	case 3:
		return fmt.Sprintf("How do I configure %s with %s and %s for %s?", w(), w(), w(), w())
	case 4:
		return fmt.Sprintf("%s 和 %s 的 %s 有什么区别", w(), w(), w())
	default:
		return fmt.Sprintf("Why does %s return an error from %s when %s restarts?", w(), w(), w())
	}
}

func filled(b *testing.B, n int) (*cache.Cache, cache.Namespace, []string) {
	b.Helper()
	c := cache.New(cache.Config{MaxEntries: -1, MaxBytes: -1})
	ns := cache.Namespace{Namespace: "bench", Model: "m"}
	r := rand.New(rand.NewPCG(1, uint64(n)))
	qs := make([]string, n)
	for i := range qs {
		qs[i] = benchQuestion(r, i)
		c.Store(ctx, ns, qs[i], c.Generation(ns), ans("answer"))
	}
	return c, ns, qs
}

func BenchmarkExactLookup(b *testing.B) {
	c, ns, qs := filled(b, 10000)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if r := c.Lookup(ctx, ns, qs[i%len(qs)]); !r.Hit {
			b.Fatal("miss")
		}
	}
}

// BenchmarkSemanticLookup looks up paraphrases that miss the exact tier:
// Lookup scans only the entries with the question's facets.
func BenchmarkSemanticLookup(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			c, ns, qs := filled(b, n)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				c.Lookup(ctx, ns, "please tell me: "+qs[i%len(qs)])
			}
		})
	}
}

// BenchmarkSemanticLookupPopular looks up paraphrases of 10k entries drawn
// as real traffic repeats questions (Zipf, s = 1.1: a few questions asked
// often, most rarely), with the readings of recently verified entries kept
// (Config.Readings, the default) and without.
func BenchmarkSemanticLookupPopular(b *testing.B) {
	for _, readings := range []int{0, -1} {
		name := "kept"
		if readings < 0 {
			name = "none"
		}
		b.Run(name, func(b *testing.B) {
			c := cache.New(cache.Config{MaxEntries: -1, MaxBytes: -1, Readings: readings})
			ns := cache.Namespace{Namespace: "bench", Model: "m"}
			r := rand.New(rand.NewPCG(1, 10000))
			qs := make([]string, 10000)
			for i := range qs {
				qs[i] = benchQuestion(r, i)
				c.Store(ctx, ns, qs[i], c.Generation(ns), ans("answer"))
			}
			z := rand.NewZipf(rand.New(rand.NewPCG(4, 4)), 1.1, 1, uint64(len(qs)-1))
			b.ResetTimer()
			for b.Loop() {
				c.Lookup(ctx, ns, "please tell me: "+qs[z.Uint64()])
			}
		})
	}
}

// BenchmarkSemanticScanAll is the worst case of the semantic tier: every
// entry has the same (empty) facets, so Lookup scans the whole namespace.
func BenchmarkSemanticScanAll(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			c := cache.New(cache.Config{MaxEntries: -1, MaxBytes: -1})
			ns := cache.Namespace{Namespace: "bench", Model: "m"}
			r := rand.New(rand.NewPCG(2, uint64(n)))
			for i := 0; i < n; i++ {
				w := func() string { return benchWords[r.IntN(len(benchWords))] }
				c.Store(ctx, ns, fmt.Sprintf("how do i configure %s with %s and %s for %s on %s", w(), w(), w(), w(), w()), c.Generation(ns), ans("a"))
			}
			b.ResetTimer()
			for b.Loop() {
				c.Lookup(ctx, ns, "please explain how to configure kafka with nginx and tls for etcd")
			}
		})
	}
}

// BenchmarkExplain scans the whole namespace for its candidates.
func BenchmarkExplain(b *testing.B) {
	c, ns, qs := filled(b, 10000)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		c.Explain(ctx, ns, "please tell me: "+qs[i%len(qs)])
	}
}

func BenchmarkEmbedBuiltin(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	qs := make([]string, 600)
	for i := range qs {
		qs[i] = benchQuestion(r, i)
	}
	var e cache.Builtin
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := e.Embed(ctx, qs[i%len(qs)]); err != nil {
			b.Fatal(err)
		}
	}
}
