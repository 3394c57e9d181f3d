package upstream

import (
	"encoding/json"
	"reflect"
	"testing"
)

// chunkSeeds are the chunk shapes the OpenAI client's tests and real
// servers send, and the awkward JSON around them.
var chunkSeeds = []string{
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":" token"},"finish_reason":null}]}`,
	`{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
	`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
	`{"choices":[{"delta":{"role":"assistant","content":null}}]}`,
	`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
	`{"choices":[{"delta":{"content":"last"},"finish_reason":"length"}]}`,
	`{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"whole"},"finish_reason":"stop"}]}`,
	`{"error":{"message":"boom","code":500}}`,
	`{"error":"plain"}`,
	`{"error":null,"choices":[{"delta":{"content":"x"}}]}`,
	`{not json`,
	`{"choices":[{"delta":{"content":"a\nb\"c\\d\/e\u00e9\ud83d\ude00 \ud800 \udc00x\u0000"}}]}`,
	"{\"choices\":[{\"delta\":{\"content\":\"bad \xff\xfe utf8 é\"}}]}",
	`{"Choices":[{"delta":{"content":"case"}}]}`,
	`{"choices":[{"Delta":{"content":"case"}}]}`,
	`{"choices":[{"delta":{"CONTENT":"case"}}]}`,
	`{"choi\u0063es":[{"delta":{"content":"escaped key"}}]}`,
	`{"choıces":[{"delta":{"content":"dotless i"}}]}`, `{"choiceſ":[{"delta":{"content":"long s"}}]}`,
	`{"choices":[{"fınish_reason":"stop","delta":{"contenté":"x"}}]}`,
	`{"choices":[{"delta":{"content":"one"}},{"delta":{"content":"two"}}]}`,
	`{"choices":[{"delta":{"content":"a"},"delta":{"content":"b"}}]}`,
	`{"choices":[{"delta":{"content":"a","content":"b"}}]}`,
	`{"choices":[null]}`,
	`{"choices":null}`,
	`{"choices":[{"delta":{"content":5}}]}`,
	`{"choices":[{"finish_reason":1}]}`,
	`{"choices":[{"delta":"x"}]}`,
	`{"choices":{}}`,
	`{"x":[1,-0.5e+10,true,false,null,{"y":[]}],"choices":[{"delta":{"content":"n"}}]}`,
	`{"x":01}`, `{"x":1.}`, `{"x":-}`, `{"x":1e}`, `{"x":tru}`, `{"x":"\q"}`, `{"x":"\u12"}`,
	"{\"x\":\"ctl\x01\"}",
	` { "choices" : [ { "delta" : { "content" : "spaced" } } ] } `,
	`{"choices":[{"delta":{"content":"x"}}]} trailing`,
	`null`, `[]`, `"s"`, `{}`,
	`{"choices":[{"delta":{"content":"<&>\u2028"}}]}`,
}

// TestDecodeChunkMatchesEncodingJSON: the fast chunk decoder gives
// encoding/json's result and error on every seed, into a reused chunk.
func TestDecodeChunkMatchesEncodingJSON(t *testing.T) {
	var prev chatChunk
	for _, s := range chunkSeeds {
		checkDecodeChunk(t, s, &prev)
	}
}

// FuzzDecodeChunk compares the fast chunk decoder with encoding/json.
func FuzzDecodeChunk(f *testing.F) {
	for _, s := range chunkSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var prev chatChunk
		_ = decodeChunk(chunkSeeds[0], &prev) // decode into a used chunk
		checkDecodeChunk(t, s, &prev)
	})
}

func checkDecodeChunk(t *testing.T, s string, reused *chatChunk) {
	t.Helper()
	var want chatChunk
	wantErr := json.Unmarshal([]byte(s), &want)
	gotErr := decodeChunk(s, reused)
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("%q: error %v; encoding/json: %v", s, gotErr, wantErr)
	}
	if wantErr != nil {
		if gotErr.Error() != wantErr.Error() {
			t.Fatalf("%q: error %q; encoding/json: %q", s, gotErr, wantErr)
		}
		return
	}
	got := *reused
	if len(got.Choices) == 0 && len(want.Choices) == 0 {
		// nil or empty: the client reads only len
		got.Choices, want.Choices = nil, nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %+v\nwant %+v", s, got, want)
	}
}

// BenchmarkDecodeChunk is one usual content chunk, decoded.
func BenchmarkDecodeChunk(b *testing.B) {
	b.ReportAllocs()
	var c chatChunk
	for b.Loop() {
		if err := decodeChunk(chunkSeeds[0], &c); err != nil || c.Choices[0].Delta.Content != " token" {
			b.Fatal(err)
		}
	}
}
