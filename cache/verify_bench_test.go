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

// BenchmarkVerifyChinese is the same for two Chinese questions that differ
// by light edits (是…的, 可以 / 能, 现在), which the verification reads
// again without them.
func BenchmarkVerifyChinese(b *testing.B) {
	q := "请问A区仓库的这批货现在可以发到上海吗"
	e := "A区仓库的这批货是能发到上海的吗"
	for b.Loop() {
		verifyPair(signature(q), signature(e))
	}
}
