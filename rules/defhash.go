package rules

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// hashedFields are the parts of a tool definition that spec §1 puts inside
// def_hash. Other fields a host lists (title, icons, _meta, outputSchema)
// are left out: the spec names these four.
var hashedFields = []string{"name", "description", "inputSchema", "annotations"}

// DefHash returns the spec §1 def_hash of a tool definition as the host
// lists it (for an MCP server, one entry of tools/list): SHA-256 over the
// canonical JSON of its name, description, input schema and annotations,
// with sorted keys, no whitespace and every string in UTF-8 NFC. Absent
// fields stay absent: an annotation's default is never filled in.
func DefHash(definition []byte) (string, error) {
	canon, err := CanonicalDefinition(definition)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

// CanonicalDefinition returns the exact bytes [DefHash] hashes.
func CanonicalDefinition(definition []byte) ([]byte, error) {
	if !utf8.Valid(definition) {
		return nil, errors.New("tool definition is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(definition))
	dec.UseNumber()
	var all map[string]any
	if err := dec.Decode(&all); err != nil {
		return nil, fmt.Errorf("tool definition: %w", err)
	}
	if dec.More() {
		return nil, errors.New("tool definition: trailing data after the object")
	}
	if _, ok := all["name"].(string); !ok {
		return nil, errors.New("tool definition: name must be a string")
	}
	picked := make(map[string]any, len(hashedFields))
	for _, k := range hashedFields {
		if v, ok := all[k]; ok {
			picked[k] = v
		}
	}
	var b bytes.Buffer
	if err := writeCanonical(&b, picked); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeCanonical writes v with sorted keys, no whitespace, NFC strings,
// and numbers in the shortest form that round-trips (ECMAScript style, as
// RFC 8785 asks).
func writeCanonical(b *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		writeCanonicalString(b, v)
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return fmt.Errorf("number %s: %w", v, err)
		}
		// encoding/json formats float64 the way ECMAScript does.
		out, err := json.Marshal(f)
		if err != nil {
			return fmt.Errorf("number %s: %w", v, err)
		}
		b.Write(out)
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCanonical(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		// Keys are normalised before sorting so that two spellings of
		// the same key cannot produce two orders.
		keys := make([]string, 0, len(v))
		byNorm := make(map[string]any, len(v))
		for k, e := range v {
			nk := norm.NFC.String(k)
			if _, dup := byNorm[nk]; dup {
				return fmt.Errorf("duplicate key %q after NFC normalisation", nk)
			}
			byNorm[nk] = e
			keys = append(keys, nk)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonicalString(b, k)
			b.WriteByte(':')
			if err := writeCanonical(b, byNorm[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("unexpected JSON value of type %T", v)
	}
	return nil
}

func writeCanonicalString(b *bytes.Buffer, s string) {
	s = norm.NFC.String(s)
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}
