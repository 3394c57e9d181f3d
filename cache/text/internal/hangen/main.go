// Command hangen writes cache/text/hanwords_gen.txt, the word frequencies
// the verification segments Chinese with, generated from jieba's
// dictionary rather than written by hand: every Han character, and the
// two-character words of frequency minFreq or more, except those in which
// a role character (从, 自, 由, 对, 给, 在, 的 …) still marks a role; the
// characters tagged as verbs or adjectives; the two-character words
// tagged as function words; and the three-character nouns that end in a
// modal character (运动会, 太阳能).
//
//	go run ./cache/text/internal/hangen -jieba /usr/lib/python3/dist-packages/jieba/dict.txt -o cache/text/hanwords_gen.txt
//
// jieba's dictionary: Debian's python3-jieba (MIT licence). The output is
// committed; the build does not need jieba.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// roleChars are the Chinese characters the verification reads as role
// markers (cache/verify.go, roleMarkers).
const roleChars = "把将被让叫由给向对朝往到至从自在于比和与跟同及或为替的"

// modalChars are the modal characters that also end nouns: 会 (will; a
// meeting) and 能 (can; energy, function).
const modalChars = "会能"

// minNounFreq is the least dictionary frequency of a three-character noun
// ending in a modal character: rarer ones are names and terms.
const minNounFreq = 20

// minFreq is the least dictionary frequency of a two-character word
// taken: rarer words are names and terms, and a rare word that wins a
// segmentation by accident (跟进 in 线程跟进程) does more harm than good.
const minFreq = 300

func main() {
	dict := flag.String("jieba", "/usr/lib/python3/dist-packages/jieba/dict.txt", "jieba's dict.txt (Debian python3-jieba)")
	out := flag.String("o", "cache/text/hanwords_gen.txt", "output file")
	flag.Parse()
	t, err := readDict(*dict)
	if err != nil {
		log.Fatal(err)
	}
	if err := write(t, *out); err != nil {
		log.Fatal(err)
	}
}

// readDict reads jieba's dictionary once. words holds every Han character
// and the two-character words of frequency minFreq or more, each with its
// frequency class (4·ln f, rounded), leaving out the words that keep a
// role character's role: a preposition or conjunction (对于, 由于, 自从)
// and a verb whose second character is a role character (送给, 放在, 来自,
// 回到: it still marks the recipient, the place, the origin). Without them,
// the segmentation leaves the role character alone, and it stays a
// marker. modalNouns holds the three-character words tagged as nouns (n,
// nz, j) of frequency minNounFreq or more that end in a modal character
// (奥运会, 太阳能), sorted: there the character is no modal. verbal holds the single characters tagged as a verb or an
// adjective (跑, 说, 长), of frequency minFreq or more, sorted: the
// characters a complement 得 follows (跑得快), where a 得 after any other
// is a must (药得饭后吃). function holds the two-character words taken
// that are tagged as closed-class words (functionTags: 马上, 无论, 如何, 我们,
// 今年), sorted: the words whose replacement the one-word checks leave to
// the facets and the other checks.
func readDict(path string) (tables, error) {
	f, err := os.Open(path)
	if err != nil {
		return tables{}, err
	}
	defer f.Close()
	words := map[string]int{}
	var verbal, function, modalNouns []string
	total := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 {
			continue
		}
		w, pos := []rune(fs[0]), fs[2]
		freq, err := strconv.Atoi(fs[1])
		total += max(freq, 0)
		if len(w) == 3 && freq >= minNounFreq && strings.ContainsRune(modalChars, w[2]) && (pos == "n" || pos == "nz" || pos == "j") {
			modalNouns = append(modalNouns, fs[0]) // nouns, not names (美国会 is nt) nor verbs (决不会)
		}
		if err != nil || freq < 1 || len(w) > 2 || !unicode.Is(unicode.Han, w[0]) || len(w) == 2 && !unicode.Is(unicode.Han, w[1]) {
			continue
		}
		if len(w) == 1 && freq >= minFreq && (pos[0] == 'v' || pos[0] == 'a') {
			verbal = append(verbal, fs[0])
		}
		if len(w) == 2 {
			second := strings.ContainsRune(roleChars, w[1])
			if freq < minFreq || (strings.ContainsRune(roleChars, w[0]) || second) && (pos == "p" || pos == "c" || strings.HasPrefix(pos, "v") && second) {
				continue
			}
		}
		if len(w) == 2 && strings.ContainsRune(functionTags, rune(pos[0])) {
			function = append(function, fs[0])
		}
		words[fs[0]] = max(words[fs[0]], class(freq))
	}
	words[totalKey] = class(total)
	sort.Strings(verbal)
	sort.Strings(function)
	sort.Strings(modalNouns)
	return tables{words, verbal, function, modalNouns}, sc.Err()
}

// tables is what readDict reads of jieba's dictionary.
type tables struct {
	words                        map[string]int // word → frequency class
	verbal, function, modalNouns []string
}

// functionTags are the first letters of jieba's part-of-speech tags of
// closed-class words: conjunction, adverb, preposition, pronoun,
// auxiliary, modal particle, interjection, onomatopoeia, numeral,
// classifier, time and place words (the last four the facets compare).
const functionTags = "cdpruyeomqtf"

// totalKey names the frequency class of all the dictionary's words
// together, the denominator of a word's probability.
const totalKey = "total"

func class(freq int) int { return int(math.Round(4 * math.Log(float64(freq)))) }

// write writes one line per frequency class: the class, then its words
// (the first line holds "total", the class of the whole dictionary); then
// a line "verbal" with the verb and adjective characters, a line
// "function" with the function words, and a line "modalnouns" with the
// nouns that end in a modal character.
func write(t tables, path string) error {
	byClass := map[int][]string{}
	for w, k := range t.words {
		byClass[k] = append(byClass[k], w)
	}
	classes := make([]int, 0, len(byClass))
	for k := range byClass {
		classes = append(classes, k)
	}
	sort.Ints(classes)
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(file)
	fmt.Fprintln(w, "# Generated by cache/text/internal/hangen from jieba's dictionary (MIT licence); do not edit.")
	fmt.Fprintln(w, "# Each line: a frequency class (4 ln f, rounded), then the words of that class; total is the whole dictionary's.")
	for _, k := range classes {
		ws := byClass[k]
		sort.Strings(ws)
		fmt.Fprintf(w, "%d %s\n", k, strings.Join(ws, " "))
	}
	fmt.Fprintf(w, "verbal %s\n", strings.Join(t.verbal, " "))
	fmt.Fprintf(w, "function %s\n", strings.Join(t.function, " "))
	fmt.Fprintf(w, "modalnouns %s\n", strings.Join(t.modalNouns, " "))
	if err := w.Flush(); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}
