package cache

import (
	"log/slog"
	"time"
)

// Namespace is the effective cache namespace: entries of two different
// Namespaces never meet, in the exact tier or the semantic tier.
type Namespace struct {
	Tenant    string // empty when auth is off
	Namespace string // the request's namespace, e.g. "wms-prod"
	Model     string // the model that produced the answer
	// Context, when not empty, is a digest of what surrounds the question
	// in its request (instructions, earlier turns, a token limit): answers
	// are shared only between requests with the same context, because the
	// same words after other turns are another question. Empty for a lone
	// question.
	Context string
}

// Answer is a complete answer as it is stored: the original chunking is
// kept so that a hit replays as a normal stream.
type Answer struct {
	Chunks []string
}

// Kind is how a hit was found.
type Kind string

// LogValue implements slog.LogValuer (a plain string for slog: without it the handlers format it with fmt and reflection, most of the cost of the "task end" line).
func (k Kind) LogValue() slog.Value { return slog.StringValue(string(k)) }

// The kinds of hit.
const (
	KindExact    Kind = "exact"    // the exact key
	KindSemantic Kind = "semantic" // the embedding, the facets and the verification
)

// Decision is an explanation's verdict.
type Decision string

// The verdicts.
const (
	DecisionHit  Decision = "hit"
	DecisionMiss Decision = "miss"
)

// Stage names the stage of a lookup that decided (Explanation.Stage).
type Stage string

// The stages, in the order they run (see decide).
const (
	StageExact    Stage = "exact"    // the exact key
	StageBlank    Stage = "blank"    // nothing left after normalization: not cached
	StageLong     Stage = "long"     // past the semantic length bound: exact tier only
	StageEmpty    Stage = "empty"    // nothing cached in the namespace
	StageContent  Stage = "content"  // neither content nor facets to compare (or a zero vector): exact tier only
	StageEmbedder Stage = "embedder" // no vector: exact tier only
	StageScore    Stage = "score"    // below the threshold
	StageFacets   Stage = "facets"   // a facet differs
	StageVerify   Stage = "verify"   // the verification stage accepted or refused
)

// Result is the cache decision for one question.
type Result struct {
	Hit    bool
	Kind   Kind    // KindExact or KindSemantic on a hit
	Score  float64 // cosine similarity of the best candidate (1 for exact)
	Answer Answer  // the stored answer on a hit; it shares the entry's chunks: read only
	// Gen is the generation of the namespace's scope the lookup saw: the
	// answer made for a miss is stored under it (Store), so that it is
	// refused when the scope was purged in between.
	Gen Generation
}

// Candidate is one entry considered by a lookup, for explanations.
type Candidate struct {
	Question    string   `json:"question"`
	Score       float64  `json:"score"`
	Facets      []string `json:"facets"`
	FacetsMatch bool     `json:"facets_match"`
	AgeS        int64    `json:"age_s"`
	TTLS        int64    `json:"ttl_s"`
	Hits        int64    `json:"hits"`
}

// Query describes the looked-up question in an Explanation.
type Query struct {
	Normalized string   `json:"normalized"`
	Facets     []string `json:"facets"`
}

// Explanation is a dry-run lookup: the decision and why, changing nothing.
type Explanation struct {
	Decision   Decision    `json:"decision"`
	Kind       Kind        `json:"kind,omitempty"`
	Score      float64     `json:"score"`
	Threshold  float64     `json:"threshold"`
	Namespace  string      `json:"namespace"` // the effective namespace, as a string
	Key        string      `json:"key"`       // hex SHA-256 exact key
	Query      Query       `json:"query"`
	Candidates []Candidate `json:"candidates"`
	Reason     string      `json:"reason"`
	// Stage is the stage that decided (StageExact … StageVerify).
	Stage Stage `json:"stage"`
	// Verify is the verification stage's word on the best candidate that
	// passed the score and the facets; absent when none did.
	Verify *Verification `json:"verification,omitempty"`
}

// NamespaceStats are the counters of one effective namespace.
type NamespaceStats struct {
	Namespace    string `json:"namespace"` // effective namespace string
	Tenant       string `json:"tenant,omitempty"`
	Name         string `json:"name"` // the request namespace
	Model        string `json:"model"`
	Entries      int    `json:"entries"`
	Bytes        int64  `json:"bytes"`
	HitsExact    int64  `json:"hits_exact"`
	HitsSemantic int64  `json:"hits_semantic"`
	Misses       int64  `json:"misses"`
	Bypasses     int64  `json:"bypasses"`
	Evictions    int64  `json:"evictions"`
}

// Config configures a Cache. The zero value works.
type Config struct {
	// Threshold is the cosine similarity for a semantic hit.
	// default: 0.92
	Threshold float64
	// TTL is an entry's lifetime.
	// default: 24h
	TTL time.Duration
	// MaxEntries bounds the entries of the whole cache; the oldest are
	// evicted first. default: 100000
	MaxEntries int
	// MaxBytes bounds the stored questions, answers and vectors, in bytes
	// (a builtin-embedder entry is ~0.4 KiB plus its answer).
	// default: 256 MiB
	MaxBytes int64
	// Embedder turns a normalized question into a vector for the semantic
	// tier. default: the builtin hashed n-gram embedder.
	Embedder Embedder
	// EmbedTimeout bounds one embedding call; past it the lookup goes on
	// with the exact tier only. default: 200ms
	EmbedTimeout time.Duration
	// Now returns the current time. default: time.Now
	Now func() time.Time
	// MaxSemanticRunes is the longest normalized question, in runes, that
	// the semantic tier analyses and embeds. A longer question uses the
	// exact tier only (Lookup, Store and Explain), so the work a lookup
	// does before admission is bounded whatever the prompt's size, beyond
	// normalizing and hashing it. default: 2000; negative: no bound.
	MaxSemanticRunes int
	// MaxNamespaces bounds the effective namespaces (tenant, namespace,
	// model) that have counters: past it the least recently used
	// namespace's counters are dropped (its entries stay, and are counted
	// again once it is used). Purge drops a namespace's counters too.
	// default: 10000; negative: no bound.
	MaxNamespaces int
	// Readings is how many stored questions' readings (what the
	// verification and the exact re-score read of a candidate) are kept,
	// the most recently used, so that an entry that answers many lookups
	// is read once. Only questions of at most maxKeptReading bytes are
	// kept: a reading takes about 5 KiB for a 60-byte question and at most
	// about 21 KiB. default: 1024; negative: none kept.
	Readings int
}
