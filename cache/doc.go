// Package cache is sluice's namespaced semantic answer cache.
//
// A question is normalized (see text.Normalize), keyed exactly by
// SHA-256(namespace 0x00 normalized) (see ExactKey), and embedded for a
// similarity tier in which a hit also needs equal facets (identifiers,
// numbers and units, zones, dates, negation, polarity and dimension words;
// see text.Facets), so that "SKU-10234" never answers "SKU-10235" and "inbound"
// never answers "outbound". A candidate that passes the score and the
// facets is verified last (verify.go): names, the order and roles of the
// things named, and the kind of question must agree, so that "Bob reports
// to Alice" never answers "Alice reports to Bob", whatever the embedder.
// Only complete answers are stored; a lookup never fails, it misses.
//
// Entries of different effective namespaces (tenant, request namespace and
// model; see Namespace.String) never meet. The default embedder, Builtin,
// runs in-process with no network; OpenAIEmbedder calls any
// OpenAI-compatible /embeddings endpoint. Explain gives the decision of
// Lookup and why, as a dry run.
//
// The files follow the job: decide.go is the one decision, stage by stage,
// that Lookup acts on and Explain renders; verify.go is the verification
// stage, its own reading of a question and the checks; embed.go the
// embedders; index.go and vector.go the store and its scan. Reading text
// (normalization, facets, the lexicon, the analysis the builtin embedder
// hashes) is package cache/text.
//
// Vectors are stored sparsely (6 bytes per nonzero) when at most a quarter
// of their elements are nonzero, as with Builtin, and densely (4 bytes per
// element) otherwise; a semantic scan costs time in proportion to the
// stored size, and MaxBytes counts the stored size.
package cache
