package pipeline

// PermitLease is the fleet lease of p ("" with a local budget), for the
// tests of package pipeline_test that look it up in their store.
func PermitLease(p *Permit) string { return p.lease }
