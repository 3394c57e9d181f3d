// Package text reads a question for the cache: normalization (the form
// whose equality is an exact hit), facets (the things a question is about,
// which must be equal for a semantic hit) and content (the meaning-bearing
// words the builtin embedder hashes), through one analysis of English and
// Chinese text driven by a built-in lexicon: hand-written grammar and guards
// (lexicon.go), antonym facets and the stemmer's word lists generated
// from WordNet (lexicon_gen.txt, by the command internal/lexgen), and word
// frequencies for segmenting Chinese generated from jieba's dictionary
// (hanwords_gen.txt, by the command internal/hangen).
//
// It reads; it does not decide. Package cache keys, embeds, scores and
// verifies. The verification stage's own reading of a question (the
// signature in cache/verify.go: words as written, role markers, clause
// breaks, question words) stays in package cache with the checks it feeds,
// because that reading is shaped by and for those checks alone; it uses
// IsHan from here so that both readings agree on what is Chinese,
// OpeningOf so that it compares the opening subject the facets left out,
// and the word readings it needs from the same resources: VerbTense and
// IsVerb (WordNet), HanSegment, InWord, HanWord and HanVerbal (jieba).
//
// Its exported surface: Normalize, Facets, Content, IsHan, OpeningOf and
// those word readings.
package text
