package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// DefaultNamespace is the request namespace used when Namespace.Namespace
// is empty.
const DefaultNamespace = "default"

// NamespacePattern is the rule of a request namespace (the contract's
// "namespace" field): 1 to 64 of A-Z a-z 0-9 . _ -. The HTTP server and
// the clients check names with ValidNamespace.
const NamespacePattern = `[A-Za-z0-9._-]{1,64}`

var namespaceRE = regexp.MustCompile(`^` + NamespacePattern + `$`)

// ValidNamespace reports whether name is a valid request namespace
// (NamespacePattern).
func ValidNamespace(name string) bool { return namespaceRE.MatchString(name) }

// String returns the effective namespace as one unambiguous string:
// "namespace@model" without a tenant and "tenant/namespace@model" with one,
// followed by "#context" when the question has a context.
//
// Each part is escaped: every byte outside [A-Za-z0-9._-] becomes %XX
// (upper-case hex), so an escaped part never contains "/", "@" or a
// separator of another part, and two different Namespaces always give two
// different strings. A valid request namespace ([A-Za-z0-9._-]{1,64}) is
// never changed by the escaping. An empty request namespace is "default".
func (ns Namespace) String() string {
	name := ns.Namespace
	if name == "" {
		name = DefaultNamespace
	}
	var b strings.Builder
	if ns.Tenant != "" {
		escapePart(&b, ns.Tenant)
		b.WriteByte('/')
	}
	escapePart(&b, name)
	b.WriteByte('@')
	escapePart(&b, ns.Model)
	if ns.Context != "" {
		b.WriteByte('#')
		escapePart(&b, ns.Context)
	}
	return b.String()
}

// escapePart writes s with every byte outside [A-Za-z0-9._-] as %XX.
func escapePart(b *strings.Builder, s string) {
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
}

// ExactKey returns the exact-tier key of a normalized question: the hex
// SHA-256 of the effective namespace string, one 0x00 byte, and the
// normalized question. The 0x00 separator cannot occur in the namespace
// string, so two different (namespace, question) pairs never share a key.
// The key is also the entry's deterministic id: storing the same question
// again in the same namespace replaces the entry.
func ExactKey(ns Namespace, normalized string) string {
	h := sha256.New()
	h.Write([]byte(ns.String()))
	h.Write([]byte{0})
	h.Write([]byte(normalized))
	return hex.EncodeToString(h.Sum(nil))
}
