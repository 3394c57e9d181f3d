package text_test

import (
	"slices"
	"testing"

	"github.com/sluice-dev/sluice/cache/text"
)

// Greetings, the ways of asking "how", spelled-out auxiliaries and Chinese
// measure words read the same whichever form a question uses. The
// sentences are made up for the test.
func TestQuestionGrammarReadsAlike(t *testing.T) {
	t.Parallel()
	read := func(q string) [2][]string {
		n := text.Normalize(q)
		return [2][]string{text.Content(n), text.Facets(n)}
	}
	for _, p := range [][2]string{
		{"hello, how do I rotate the API key?", "How do I rotate the API key?"},
		{"thanks! where is the loading bay", "where is the loading bay"},
		{"您好，怎么开发票", "怎么开发票"},
		{"What's the way to rotate the API key?", "How do I rotate the API key?"},
		{"如何导出报表", "怎么导出报表"},
		{"报表怎样导出", "报表怎么导出"},
		{"I'd like to know the opening hours of the depot", "I would like to know the opening hours of the depot"},
		{"I'd like to know the opening hours of the depot", "the opening hours of the depot"},
		{"三瓶洗洁精多少钱", "3瓶洗洁精多少钱"},
		{"两辆叉车在充电吗", "2辆叉车在充电吗"},
		{"盘点是哪天", "盘点是什么时候"},
		{"卡纸了怎么处理", "卡纸了怎么办"},
		{"How many credits am I required to take?", "How many credits do I need to take?"},
		{"Which people can sign for a delivery?", "Who can sign for a delivery?"},
		{"Is 3 * 4 equal to 12?", "is 3 * 4 equal to 12"},
		{"Is 7 ≥ 7 true?", "Is 7 >= 7 true?"},                                    // a Unicode operator
		{"Why is my parcel *still* missing?", "Why is my parcel still missing?"}, // emphasis, not an operator
		{"Is the ninth aisle blocked?", "Is the 9th aisle blocked?"},
		{"冷库在哪儿", "冷库在哪里"}, // erhua
		{"What caused the outage?", "Why the outage?"},
		{"What is the cause of the delay?", "What causes the delay?"},
	} {
		if a, b := read(p[0]), read(p[1]); !slices.Equal(a[0], b[0]) || !slices.Equal(a[1], b[1]) {
			t.Errorf("%q reads %q, %q reads %q; want the same", p[0], a, p[1], b)
		}
	}
	// A greeting inside a question is what it asks about.
	for _, p := range [][2]string{
		{"How do I say thanks in French?", "How do I say hello in French?"},
		{"怎么用英语说你好", "怎么用英语说谢谢"},
		{"Hello in Japanese?", "Thanks in Japanese?"}, // no break after it: not a greeting
		{"你好怎么翻译", "谢谢怎么翻译"},
		{"谢谢请客怎么说", "请客怎么说"}, // 请 here is a verb, not 请问
		{"Hello is spelled how?", "Thanks is spelled how?"},
		{"How do I declare a string in C++?", "How do I declare a string in C?"}, // c++, c#, f# are languages
		{"Is C# slower than F#?", "Is C slower than F?"},
		{"C#怎么读取文件", "C怎么读取文件"},
		{"什么导致了延误", "延误导致了什么"}, // 导致 asks why only after 什么
	} {
		if a, b := read(p[0]), read(p[1]); slices.Equal(a[0], b[0]) {
			t.Errorf("%q and %q: content %q; want different", p[0], p[1], a[0])
		}
	}
	// A subject pronoun right after the opening auxiliary is the asker's
	// framing: no facet. A possessive or an object still is one.
	for _, p := range [][2]string{
		{"Where can I find the lost property desk?", "Where is the lost property desk?"},
		{"Do you have the blue kettle in stock?", "Is the blue kettle in stock?"},
		{"hi, how do we renew the permit?", "how to renew the permit?"},
	} {
		if a, b := read(p[0]), read(p[1]); !slices.Equal(a[1], b[1]) {
			t.Errorf("%q facets %q, %q facets %q; want the same", p[0], a[1], p[1], b[1])
		}
	}
	for _, p := range [][2]string{
		{"Where can I find my invoices?", "Where can I find the invoices?"},
		{"Can you send the file to me?", "Can you send the file?"},
		{"Which customers do we owe money?", "Which customers owe money?"}, // the pronoun after a question phrase is a participant
		{"Who am I required to pay?", "Who is required to pay?"},
	} {
		if a, b := read(p[0]), read(p[1]); slices.Equal(a[1], b[1]) {
			t.Errorf("%q and %q: facets %q; want different", p[0], p[1], a[1])
		}
	}
	for _, p := range [][2]string{
		{"三瓶洗洁精多少钱", "四瓶洗洁精多少钱"}, // a numeral before a measure word is a number
		{"两门课", "三门课"},
		{"Is the seventh aisle blocked?", "Is the eleventh aisle blocked?"},
		{"Can I move the date of the audit?", "When can I move the audit?"}, // a date that is not asked about
		{"Does one pallet weigh 2 tonnes?", "Does one pallet weigh 3 tonnes?"},
		{"每次吃两片药", "每次吃两盒药"},                                 // the measure word tells what is counted
		{"Are you open on Sunday?", "Is it open on Sunday?"}, // the copula's pronoun is what is asked about
		{"Is everyone invited?", "Is anyone invited?"},
		{"Are all the cartons on dock 2 damaged?", "Are any cartons on dock 2 damaged?"}, // all, every, each
		{"Does every invoice need a PO number?", "Does an invoice need a PO number?"},
		{"How much are the mangoes each?", "How much are all the mangoes?"},         // each is per item
		{"Is it -5 degrees outside?", "Is it 5 degrees outside?"},                   // a minus sign
		{"What city is at 40.7128, -74.0060?", "What city is at 40.7128, 74.0060?"}, // after a comma too
		{"What is -3 + 5?", "What is 3 + -5?"},                                      // which number is negative
		{"How many SKUs have stock < 10?", "How many SKUs have stock > 10?"},        // operators
		{"What does x << 2 do?", "What does x >> 2 do?"},
		{"How do I plot y = 3^x in Sheets?", "How do I plot y = x^3 in Sheets?"}, // operands in order
		{"Solve 6 / x = 3", "Solve x / 6 = 3"},
		{"Is a >= b here?", "Is a != b here?"},
		{"排在第十几名", "排在第十名"},                                                        // an approximate ordinal
		{"冷库-18度正常吗", "冷库18度正常吗"},                                                  // a minus after Chinese text
		{"What side effects can ibuprofen cause?", "Why is ibuprofen a problem?"},  // cause after its object: not why
		{"What's the largest lake in Chile?", "What's the highest lake in Chile?"}, // superlatives of other scales
		{"Which team has the most fans?", "Which team has the biggest fans?"},
	} {
		if a, b := read(p[0]), read(p[1]); slices.Equal(a[1], b[1]) {
			t.Errorf("%q and %q: facets %q; want different", p[0], p[1], a[1])
		}
	}
}

// TestUnapostrophedNegation reads a negative contraction typed without its
// apostrophe (doesnt, cant) as the contraction: a negation facet, the
// same facets as with the apostrophe.
func TestUnapostrophedNegation(t *testing.T) {
	for _, tc := range [][2]string{
		{"Why doesnt my card work abroad?", "Why doesn't my card work abroad?"},
		{"I cant log in to the portal", "I can't log in to the portal"},
		{"The parcel wasnt delivered", "The parcel wasn't delivered"},
		{"The store aint open on Sundays", "The store ain't open on Sundays"},
	} {
		a, b := text.Facets(text.Normalize(tc[0])), text.Facets(text.Normalize(tc[1]))
		if !slices.Contains(a, "neg") || !slices.Equal(a, b) {
			t.Errorf("%q: facets %v, want %v (with neg)", tc[0], a, b)
		}
	}
}
