package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wholeValue reports whether data is one JSON value (whitespace around
// it) by ValueEnd.
func wholeValue(data []byte) bool {
	end, ok := ValueEnd(data, SkipSpace(data, 0))
	return ok && SkipSpace(data, end) == len(data)
}

func TestValueEnd(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{`0`, true}, {`-0`, true}, {`-0.5e-7`, true}, {`12E+3`, true}, {`1.25`, true},
		{`01`, false}, {`-`, false}, {`1.`, false}, {`.5`, false}, {`1e`, false}, {`1e+`, false}, {`+1`, false},
		{`true`, true}, {`false`, true}, {`null`, true}, {`tru`, false}, {`nul`, false}, {`True`, false},
		{`""`, true}, {`"a\"\\\/\b\f\n\r\t\u00e9\uD83D"`, true}, {"\"\xff\xfe\"", true}, {"\"\u2028\"", true},
		{`"\x"`, false}, {`"\u12"`, false}, {`"\u12g4"`, false}, {"\"a\nb\"", false}, {"\"\x00\"", false}, {`"abc`, false},
		{`[]`, true}, {`[ ]`, true}, {`[1,[2,{}],"x"]`, true}, {`[1,]`, false}, {`[,1]`, false}, {`[1 2]`, false}, {`[`, false},
		{`{}`, true}, {` { "a" : 1 , "b" : [ ] } `, true}, {`{"a":1,}`, false}, {`{"a"}`, false}, {`{a:1}`, false},
		{`{"a":1 "b":2}`, false}, {`{"a":1}}`, false}, {``, false}, {` `, false},
		{strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth), true},
		{strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1), false}, // left to encoding/json
	} {
		assert.Equal(t, c.want, wholeValue([]byte(c.in)), "%q", c.in)
		if c.want {
			assert.True(t, json.Valid([]byte(c.in)), "%q: encoding/json agrees", c.in)
		}
	}
}

// FuzzValueEnd: ValueEnd takes exactly the values encoding/json takes
// (but the deepest, which it leaves to encoding/json).
func FuzzValueEnd(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e3,true,null,"x\u00e9"]}`, `[01]`, `"\u12"`, `{"a":1,}`, " [ 1 , 2 ] ", "\"\x7f\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := wholeValue(data)
		if deep := strings.Count(string(data), "[")+strings.Count(string(data), "{") >= maxDepth; deep && !got {
			return
		}
		require.Equal(t, json.Valid(data), got, "%q", data)
	})
}

func TestUint32s(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []uint32
		ok   bool
	}{
		{`[]`, []uint32{}, true}, {`[ ]`, []uint32{}, true}, {`[0]`, []uint32{0}, true},
		{"[ 1 ,\n2,3\t]", []uint32{1, 2, 3}, true}, {`[4294967295]`, []uint32{4294967295}, true},
		{`[4294967296]`, nil, false}, {`[99999999999]`, nil, false}, {`[00]`, nil, false}, {`[01]`, nil, false},
		{`[-0]`, nil, false}, {`[-1]`, nil, false}, {`[1.0]`, nil, false}, {`[1e3]`, nil, false}, {`["1"]`, nil, false},
		{`[null]`, nil, false}, {`[[1]]`, nil, false}, {`[1,]`, nil, false}, {`[,]`, nil, false}, {`[1 2]`, nil, false},
		{`[1`, nil, false}, {`[1,`, nil, false}, {`1`, nil, false}, {``, nil, false},
	} {
		got, end, ok := Uint32s(nil, []byte(c.in), 0)
		require.Equal(t, c.ok, ok, "%q", c.in)
		if ok {
			assert.Equal(t, c.want, got, "%q", c.in)
			assert.Equal(t, len(c.in), end, "%q", c.in)
		}
	}
	buf := make([]uint32, 3, 8)
	got, _, ok := Uint32s(buf, []byte(`[5,6]`), 0)
	require.True(t, ok)
	assert.Equal(t, []uint32{5, 6}, got)
	assert.Same(t, &buf[0], &got[0], "into the caller's memory")
}

// FuzzUint32s: what Uint32s takes, encoding/json reads as the same
// []uint32.
func FuzzUint32s(f *testing.F) {
	for _, s := range []string{"[1,2,3]", " [ 0 , 7 ] ", "[]", "[01]", "[-1]", "[1.5]", "[4294967296]", "[1,]", "[1 2]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		i := SkipSpace(data, 0)
		ids, end, ok := Uint32s(nil, data, i)
		if !ok {
			return
		}
		var want []uint32
		require.NoError(t, json.Unmarshal(data[:end], &want), "%q", data)
		require.Equal(t, want, ids, "%q", data)
	})
}

func TestMembers(t *testing.T) {
	type kv struct{ k, v string }
	read := func(body string) ([]kv, bool) {
		var got []kv
		data := []byte(body)
		ok := Members(data, func(key []byte, i int) int {
			end, ok := ValueEnd(data, i)
			if !ok {
				return -1
			}
			got = append(got, kv{string(key), string(data[i:end])})
			return end
		})
		return got, ok
	}
	for _, c := range []struct {
		in   string
		want []kv
		ok   bool
	}{
		{`{}`, nil, true}, {" { } \n", nil, true},
		{`{"a":1,"b":[2]}`, []kv{{"a", "1"}, {"b", "[2]"}}, true},
		{` { "a" : "x" , "a" : null } `, []kv{{"a", `"x"`}, {"a", "null"}}, true},
		{`{"a":1,}`, nil, false}, {`{"a":1} x`, nil, false}, {`{"a":1`, nil, false}, {`{"\u0061":1}`, nil, false},
		{`{"a" 1}`, nil, false}, {`{1:1}`, nil, false}, {`[]`, nil, false}, {``, nil, false}, {`{"a":}`, nil, false},
	} {
		got, ok := read(c.in)
		require.Equal(t, c.ok, ok, "%q", c.in)
		if ok {
			assert.Equal(t, c.want, got, "%q", c.in)
		}
	}
}

func TestMayName(t *testing.T) {
	names := []string{"model", "token_ids"}
	assert.False(t, MayName([]byte("max_tokens"), names...))
	assert.False(t, MayName([]byte("models"), names...))
	assert.True(t, MayName([]byte("Model"), names...))
	assert.True(t, MayName([]byte("TOKEN_IDS"), names...))
	assert.True(t, MayName([]byte("to\u212Aen_ids"), names...), "the Kelvin sign folds to k")
}

func TestString(t *testing.T) {
	s, end, ok := String([]byte(`"abc" `), 0)
	require.True(t, ok)
	assert.Equal(t, "abc", string(s))
	assert.Equal(t, 5, end)
	for _, in := range []string{`"a\n"`, "\"\xff\"", "\"a\tb\"", `"abc`, `abc`} {
		_, _, ok := String([]byte(in), 0)
		assert.False(t, ok, "%q", in)
	}
}

func TestLiteral(t *testing.T) {
	for in, want := range map[string]byte{"true": 't', "false": 'f', "null": 'n', "nul": 0, "1": 0, "": 0} {
		lit, next, ok := Literal([]byte(in), 0)
		assert.Equal(t, want, lit, "%q", in)
		assert.Equal(t, want != 0, ok, "%q", in)
		if ok {
			assert.Equal(t, len(in), next)
		}
	}
}

// FuzzAppendCompact: a value ValueEnd takes is written byte for byte as
// json.Marshal writes it as a json.RawMessage.
func FuzzAppendCompact(f *testing.F) {
	for _, s := range []string{
		` [ { "role" : "user" , "content" : "a <b> & \u2028 \" \\ x" } ] `,
		"\"\xe2\x80\xa8\xe2\x80\xa9\xe2\x80\xe2\"", `{"a":[1, 2 ,{ }]}`, "\"\xff <\"", `"\\"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		i := SkipSpace(data, 0)
		end, ok := ValueEnd(data, i)
		if !ok {
			return
		}
		want, err := json.Marshal(json.RawMessage(data[i:end]))
		require.NoError(t, err)
		require.Equal(t, string(want), string(AppendCompact([]byte("x"), data[i:end])[1:]), "%q", data[i:end])
	})
}
