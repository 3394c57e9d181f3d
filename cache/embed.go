package cache

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"strings"

	"github.com/sluice-dev/sluice/cache/text"
)

// Embedder turns a question into a vector for the semantic tier. The cache
// compares vectors by cosine similarity and L2-normalizes them itself, so
// an Embedder may return vectors of any length and norm, but one Embedder
// must always return the same dimension. Implementations must be safe for
// concurrent use and should honour ctx; the cache does not wait past its
// EmbedTimeout either way.
type Embedder interface {
	// Name identifies the embedder and its model, e.g. "builtin-v1".
	Name() string
	// Embed returns the vector of text.
	Embed(ctx context.Context, text string) ([]float32, error)
}

// BuiltinDim is the dimension of the builtin embedder's vectors.
const BuiltinDim = 1024

// Builtin is the default embedder: in-process, deterministic, no network,
// about 10 µs per question. It is a hashed bag of features (the "hashing
// trick", signed, BuiltinDim buckets), L2-normalized, built from the same
// analysis as Facets:
//
//   - The facet values themselves (identifiers, numbers, zones, dates,
//     polarity words) are left out: the cache compares facets exactly, so
//     the score measures the wording around them.
//   - Stop words and polite fillers are dropped in both languages (the,
//     please, could you, 请问, 帮我, 麻烦, 一下, 的, 吗).
//   - General vocabulary is folded to shared concepts across English and
//     Chinese: how many / what number of / 多少 / 几个; left / remaining /
//     还剩 / 剩余; status / 状态; what does X mean / 是什么意思 / 代表什么;
//     why / what causes / 为什么; create / generate / 生成 / 创建, etc.
//   - Other English words are lightly stemmed (picking = pick); other Chinese
//     characters count as character unigrams and bigrams.
//   - Consecutive meaning-bearing tokens also form bigram features, with a
//     lower weight, so that word order counts a little.
//
// It recognises as paraphrases: filler and politeness changes, inflection,
// the synonyms of its vocabulary, question forms (了吗 / 了没有), and word
// order changes among few words. It does not recognise synonyms outside its
// vocabulary (short-picked vs "missing items"), abbreviations (武大 vs
// 武汉大学), or translations of words it does not know: those score low and
// miss, which only loses a saving. Unknown words and Chinese characters
// weigh more than vocabulary words, because they are usually the names that
// tell two questions apart (张伟 vs 张玮, LPUSH vs RPUSH).
type Builtin struct{}

// Name implements Embedder.
func (Builtin) Name() string { return "builtin-v1" }

// Embed implements Embedder. It never fails and ignores ctx.
func (Builtin) Embed(_ context.Context, q string) ([]float32, error) {
	r := readOf(text.Normalize(q))
	if !r.comparable() {
		return make([]float32, BuiltinDim), nil // similar to nothing (errNoFeatures)
	}
	return builtinVector(builtinFeatures(r.content)), nil
}

// reading is what the cache reads of a normalized question, in one
// analysis (text.Read): its facets, for the guard, and its content, for
// the embedding and the exact re-score.
type reading struct {
	facets, content []string
}

// readOf reads a normalized question.
func readOf(normalized string) reading {
	f, c := text.Read(normalized)
	return reading{f, c}
}

// comparable reports whether the semantic tier has anything of the
// question to compare: content, or facets that decide. A question with
// neither ("???", "the", "🔥🔥") would look like every other such question
// to any embedding.
func (r reading) comparable() bool { return len(r.content) > 0 || len(r.facets) > 0 }

// Feature weights of the builtin embedder.
const (
	wConcept  = 1.0 // a vocabulary concept
	wWord     = 1.3 // an English word outside the vocabulary
	wQuestion = 0.6 // a question form (how many, why, 什么意思)
	wHanUni   = 0.7 // one unknown Chinese character
	wHanBi    = 1.0 // two adjacent unknown Chinese characters
	wHanOne   = 1.1 // a lone unknown Chinese character
	wBigram   = 0.4 // two consecutive meaning-bearing tokens
	// wFacetsOnly is the one feature of a question with facets and no
	// other content.
	wFacetsOnly = 1.0
)

// isBuiltin reports whether e is the builtin embedder (as a value or a
// pointer): the cache then embeds in-process and re-scores candidates
// without hashing.
func isBuiltin(e Embedder) bool {
	switch e.(type) {
	case Builtin, *Builtin:
		return true
	}
	return false
}

// builtinFeature is one weighted feature of the builtin embedder.
type builtinFeature struct {
	name string
	w    float32
}

// builtinFeatures returns the weighted features of a question's content
// (see text.Content), each once, in order. A question whose words were all
// facets or stop words ("IB-5521 收货了吗") gets one shared feature: such
// questions are equal in wording, and the facets decide (the scan compares
// only entries of equal facets).
func builtinFeatures(content []string) []builtinFeature {
	fs := make([]builtinFeature, 0, 3*len(content))
	seen := make(map[string]bool, 3*len(content))
	add := func(feature string, w float32) {
		if seen[feature] {
			return // a repeated feature counts once
		}
		seen[feature] = true
		fs = append(fs, builtinFeature{feature, w})
	}
	prev := ""
	for _, c := range content {
		switch {
		case strings.HasPrefix(c, "q:"):
			add(c, wQuestion)
			continue // question forms move around: no bigrams
		case strings.HasPrefix(c, "z:"):
			rs := []rune(c[2:])
			if len(rs) == 1 {
				add("u:"+string(rs), wHanOne)
			} else {
				for i, r := range rs {
					add("u:"+string(r), wHanUni)
					if i+1 < len(rs) {
						add("b:"+string(rs[i:i+2]), wHanBi)
					}
				}
			}
		case strings.HasPrefix(c, "w:"):
			add(c, wWord)
		default:
			add(c, wConcept)
		}
		if prev != "" {
			add(prev+"\x00"+c, wBigram)
		}
		prev = c
	}
	if len(content) == 0 {
		add("\x00facets", wFacetsOnly)
	}
	return fs
}

// builtinVector hashes the features of a question's content (builtinFeatures) into an
// L2-normalized vector (the hashing trick: a bucket and a sign per
// feature). The cache never embeds a question with neither content nor
// facets ("???", "the", "🔥🔥": errNoFeatures), which would match every
// other such question; Builtin.Embed gives it the zero vector, similar to
// nothing.
func builtinVector(features []builtinFeature) []float32 {
	v := make([]float32, BuiltinDim)
	for _, f := range features {
		h := fnv.New64a()
		h.Write([]byte(f.name))
		x := h.Sum64()
		w := f.w
		if x>>63 == 1 {
			w = -w
		}
		v[x%BuiltinDim] += w
	}
	normalizeL2(v)
	return v
}

// builtinExactScore is the cosine of two questions' builtin features
// (builtinFeatures) without hashing: what builtinVector's cosine
// estimates. Two different features can share a bucket of the hashed
// vectors ("packet" and "package" did), which can make two one-word
// questions score 1.0; the cache checks a builtin candidate's score again
// with this before it is served.
func builtinExactScore(fa, fb []builtinFeature) float64 {
	wa := make(map[string]float32, len(fa))
	var na, nb, dot float64
	for _, f := range fa {
		wa[f.name] = f.w
		na += float64(f.w) * float64(f.w)
	}
	for _, f := range fb {
		nb += float64(f.w) * float64(f.w)
		dot += float64(wa[f.name]) * float64(f.w)
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// normalizeL2 scales v to unit length in place and reports whether it
// could: a zero vector (or one too small to scale in float32) stays as it
// is and has no direction to compare, so it must never be scored.
func normalizeL2(v []float32) bool {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 || math.IsInf(s, 0) || math.IsNaN(s) {
		return false
	}
	inv := float32(1 / math.Sqrt(s))
	if math.IsInf(float64(inv), 0) {
		return false
	}
	for i := range v {
		v[i] *= inv
	}
	return true
}

// OpenAIEmbedder calls an OpenAI-compatible embeddings endpoint: it POSTs
// {"model": Model, "input": text} to BaseURL + "/embeddings" and reads
// data[0].embedding. The vector is L2-normalized.
type OpenAIEmbedder struct {
	// BaseURL is the API base, e.g. "https://api.openai.com/v1" or
	// "http://127.0.0.1:11434/v1". A trailing slash is ignored.
	BaseURL string
	// APIKey is sent as a bearer token when not empty.
	APIKey string
	// Model is the embedding model, e.g. "text-embedding-3-small".
	Model string
	// Client is the HTTP client. default: http.DefaultClient
	Client *http.Client
}

// ErrEmbedding is wrapped by every error of OpenAIEmbedder.
var ErrEmbedding = errors.New("cache: embedding failed")

// Name implements Embedder.
func (e *OpenAIEmbedder) Name() string { return "openai:" + e.Model }

// Embed implements Embedder.
func (e *OpenAIEmbedder) Embed(ctx context.Context, text string) ([]float32, error) {
	body, err := json.Marshal(struct {
		Model string `json:"model"`
		Input string `json:"input"`
	}{e.Model, text})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEmbedding, err)
	}
	url := strings.TrimRight(e.BaseURL, "/") + "/embeddings"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEmbedding, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if e.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.APIKey)
	}
	client := e.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEmbedding, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%w: reading response: %w", ErrEmbedding, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%w: %s: %s", ErrEmbedding, resp.Status, bytes.TrimSpace(data[:min(len(data), 256)]))
	}
	var out struct {
		Data []struct {
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("%w: decoding response: %w", ErrEmbedding, err)
	}
	if len(out.Data) == 0 || len(out.Data[0].Embedding) == 0 {
		return nil, fmt.Errorf("%w: response has no embedding", ErrEmbedding)
	}
	v := out.Data[0].Embedding
	normalizeL2(v)
	return v, nil
}

// EncodeVector encodes v as little-endian IEEE 754 float32s, 4 bytes per
// element: the byte layout of vectors in a shared (Redis) store. A wrong
// byte order raises no error and silently ruins every score, so every
// reader and writer must go through EncodeVector and DecodeVector.
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// ErrVectorLength is returned by DecodeVector for a length that is not a
// multiple of 4.
var ErrVectorLength = errors.New("cache: encoded vector length is not a multiple of 4")

// DecodeVector decodes the output of EncodeVector.
func DecodeVector(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, ErrVectorLength
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}
