package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The settings files are edited as an ordered tree so that a merge keeps
// the user's key order and every value it does not touch, including
// numbers written as 1.0 or 1e3. A value is one of:
//
//	*object          a JSON object, members in file order
//	*array           a JSON array
//	json.RawMessage  a string, number, true, false or null, as written
type (
	object struct{ members []member }
	member struct {
		key   string
		value any
	}
	array struct{ elems []any }
)

// get returns the value of the first member named key.
func (o *object) get(key string) (any, bool) {
	for _, m := range o.members {
		if m.key == key {
			return m.value, true
		}
	}
	return nil, false
}

// set replaces the first member named key, or appends one.
func (o *object) set(key string, v any) {
	for i := range o.members {
		if o.members[i].key == key {
			o.members[i].value = v
			return
		}
	}
	o.members = append(o.members, member{key, v})
}

// setFirst is set, but a new member goes first.
func (o *object) setFirst(key string, v any) {
	if _, ok := o.get(key); ok {
		o.set(key, v)
		return
	}
	o.members = append([]member{{key, v}}, o.members...)
}

// del removes every member named key.
func (o *object) del(key string) {
	kept := o.members[:0]
	for _, m := range o.members {
		if m.key != key {
			kept = append(kept, m)
		}
	}
	o.members = kept
}

// str returns the member key as a Go string, if it is a JSON string.
func (o *object) str(key string) (string, bool) {
	v, ok := o.get(key)
	if !ok {
		return "", false
	}
	raw, ok := v.(json.RawMessage)
	if !ok {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// rawString encodes s as a JSON string without HTML escaping.
func rawString(s string) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a Go string always encodes
	return json.RawMessage(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// rawInt encodes n as a JSON number.
func rawInt(n int) json.RawMessage { return json.RawMessage(fmt.Sprint(n)) }

// rawBool encodes b as JSON true or false.
func rawBool(b bool) json.RawMessage { return json.RawMessage(fmt.Sprint(b)) }

// errEmpty reports a file that holds only white space.
var errEmpty = errors.New("empty")

// decodeTree parses one JSON value and refuses trailing data.
func decodeTree(data []byte) (any, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errEmpty
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after offset %d", dec.InputOffset())
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key is not a string at offset %d", dec.InputOffset())
				}
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				o.members = append(o.members, member{key, v})
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, err
			}
			return o, nil
		case '[':
			a := &array{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				a.elems = append(a.elems, v)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, err
			}
			return a, nil
		}
		return nil, fmt.Errorf("unexpected %v at offset %d", t, dec.InputOffset())
	case string:
		return rawString(t), nil
	case json.Number:
		return json.RawMessage(t), nil
	case bool:
		return rawBool(t), nil
	case nil:
		return json.RawMessage("null"), nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// encodeTree writes v as JSON indented by two spaces, with a final newline.
func encodeTree(v any) []byte {
	var b strings.Builder
	encodeValue(&b, v, 0)
	b.WriteByte('\n')
	return []byte(b.String())
}

func encodeValue(b *strings.Builder, v any, depth int) {
	indent := func(d int) {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat("  ", d))
	}
	switch v := v.(type) {
	case *object:
		if len(v.members) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteByte('{')
		for i, m := range v.members {
			if i > 0 {
				b.WriteByte(',')
			}
			indent(depth + 1)
			b.Write(rawString(m.key))
			b.WriteString(": ")
			encodeValue(b, m.value, depth+1)
		}
		indent(depth)
		b.WriteByte('}')
	case *array:
		if len(v.elems) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteByte('[')
		for i, e := range v.elems {
			if i > 0 {
				b.WriteByte(',')
			}
			indent(depth + 1)
			encodeValue(b, e, depth+1)
		}
		indent(depth)
		b.WriteByte(']')
	case json.RawMessage:
		b.Write(v)
	default:
		panic(fmt.Sprintf("install: unexpected JSON tree node %T", v))
	}
}
