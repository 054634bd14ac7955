package agent

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// slowParse is parseObject's reference path: encoding/json into an any,
// then the strict walk.
func slowParse(b []byte) (fields, bool) {
	if !utf8.Valid(b) {
		return nil, false
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil, false
	}
	obj, ok := v.(map[string]any)
	if !ok || checkStrict(b) != nil {
		return nil, false
	}
	return obj, true
}

// sameAsSlow fails t unless parseFast takes exactly what the slow path
// takes, with deeply equal values.
func sameAsSlow(t *testing.T, b []byte) {
	t.Helper()
	if !utf8.Valid(b) {
		return // parseObject refuses it before either path
	}
	want, wantOK := slowParse(b)
	got, gotOK := parseFast(b)
	if gotOK != wantOK {
		t.Fatalf("parseFast(%q) ok=%v, slow path ok=%v", b, gotOK, wantOK)
	}
	if gotOK && !reflect.DeepEqual(map[string]any(got), map[string]any(want)) {
		t.Fatalf("parseFast(%q) = %#v, slow path %#v", b, got, want)
	}
}

// fastCases are inputs at the edges of JSON's grammar and of the strict
// rules, valid and not.
var fastCases = []string{
	`{}`, ` {} `, "\t{\r\n}\n", `{"a":1}`, `{"a":-0}`, `{"a":0.5e-3}`, `{"a":1E+2}`, `{"a":1e400}`,
	`{"a":-1e-400}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":+1}`, `{"a":-}`, `{"a":1e}`, `{"a":1e+}`,
	`{"a":-01}`, `{"a":123456789012345678901234567890}`, `{"a":0x10}`, `{"a":Infinity}`, `{"a":NaN}`,
	`{"a":true,"b":false,"c":null}`, `{"a":tru}`, `{"a":nul}`, `{"a":True}`, `{"a":[]}`, `{"a":[1,]}`,
	`{"a":[,1]}`, `{"a":[1 2]}`, `{"a":{}}`, `{"a":{},}`, `{,"a":1}`, `{"a" 1}`, `{"a":1 "b":2}`, `{a:1}`,
	`{'a':1}`, `{"a":"x"`, `{"a":"x}`, `{"a":"\x"}`, `{"a":"\u00e9\/\b\f\n\r\t\"\\"}`, `{"a":"\u00E9"}`,
	`{"a":"\u00g9"}`, `{"a":"\u00"}`, `{"a":"\ud83d\ude00"}`, `{"a":"\ud83d\u0041"}`, `{"a":"\ud83d"}`,
	`{"a":"\ude00"}`, `{"a":"\ud83d\\ude00"}`, `{"a":"\u0000"}`, `{"\u0000":1}`, `{"a":"` + "\x01" + `"}`,
	`{"a":"` + "\x7f" + `"}`, `{"a":"é ✓ 😀"}`, `{"a":"\ufffd"}`, "{\"a\":\"\xef\xbf\xbd\"}", `{"a":"x\u2028y"}`,
	`{"a":1,"a":1}`, `{"a":1,"\u0061":1}`, `{"a":{"a":{"a":[{"a":1},{"a":2}]}}}`, `{"a":[{"k":1,"k":2}]}`,
	`{} {}`, `{}x`, `[]`, `"x"`, `1`, `null`, ``, ` `, `{`, `}`, `{"a":[`, `{"a":[1`, `{"a":{"b":`,
	`{"a":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`,
	`{"a":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`,
	`{"a":` + strings.Repeat(`{"b":`, maxDepth-1) + "1" + strings.Repeat("}", maxDepth-1) + `}`,
	`{"a":` + strings.Repeat(`{"b":`, maxDepth) + "1" + strings.Repeat("}", maxDepth) + `}`,
	manyKeys(100, ""), manyKeys(100, `,"k3":0`), manyKeys(40, `,"k\u00331":0`),
}

// TestParseFastMatchesEncodingJSON: on every edge case, the fixtures and
// the strict-parsing table, the fast path takes exactly what encoding/json
// and checkStrict take, with the same values; FuzzParseFast goes on from
// these seeds.
func TestParseFastMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, in := range fastSeeds(t) {
		sameAsSlow(t, in)
	}
	// It is the path valid payloads take: the fixtures all go fast.
	for _, fx := range fixtures(t) {
		if _, ok := parseFast(fx.data); !ok {
			t.Errorf("fixture %s: parseFast refused it", fx.name)
		}
	}
}

func fastSeeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	for _, c := range fastCases {
		seeds = append(seeds, []byte(c))
	}
	for _, fx := range fixtures(tb) {
		seeds = append(seeds, fx.data)
	}
	for _, n := range Names() {
		seeds = append(seeds, []byte(payload(n, `"Bash"`, `"ls \ud83d\ude00 \"q\" \\"`)))
	}
	return seeds
}

// FuzzParseFast: for any bytes, the fast path takes exactly what
// encoding/json and the strict walk take, and builds the same values.
func FuzzParseFast(f *testing.F) {
	for _, s := range fastSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sameAsSlow(t, b)
	})
}

// BenchmarkParseObject compares the fast path with the reference path on
// a Claude pre-tool Bash payload.
func BenchmarkParseObject(b *testing.B) {
	var data []byte
	for _, fx := range fixtures(b) {
		if fx.agent == Claude && fx.name == "pre-bash" {
			data = fx.data
		}
	}
	for _, c := range []struct {
		name  string
		parse func([]byte) (fields, bool)
	}{{"fast", parseFast}, {"encoding-json", slowParse}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := c.parse(data); !ok {
					b.Fatal("refused")
				}
			}
		})
	}
}
