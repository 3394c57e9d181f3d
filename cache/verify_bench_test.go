package cache

import "testing"

// BenchmarkVerify is the cost of the verification stage for one candidate:
// reading both questions and comparing them.
func BenchmarkVerify(b *testing.B) {
	q := "Please tell me how many units of SKU-10234 are left in zone A for the Delacroix account?"
	e := "How many units of SKU-10234 are left in zone A for Delacroix?"
	for b.Loop() {
		verifyPair(signature(q), signature(e))
	}
}
