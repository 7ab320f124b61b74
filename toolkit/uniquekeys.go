package toolkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// CheckUniqueKeys returns an error naming the first key that an object of
// the JSON text b has twice, or nil when it has none. JSON readers
// disagree on such an object: most keep the last value, some the first,
// some both. JSON that decides what a run does and that people review (a
// plan's input, a mocks file, a planfile) is checked with it before it is
// decoded, so that what a reviewer or a filter reads with another reader
// is what runs. Malformed JSON is not judged: decoding it reports the
// error.
func CheckUniqueKeys(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	// Each open object has the keys read so far and whether its next
	// token is a key; each open array a nil set.
	type open struct {
		keys    map[string]bool
		wantKey bool
	}
	var stack []open
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or malformed JSON: left to the decoder
		}
		top := len(stack) - 1
		if s, ok := tok.(string); ok && top >= 0 && stack[top].wantKey {
			if stack[top].keys[s] {
				line := 1 + bytes.Count(b[:dec.InputOffset()], []byte("\n"))
				return fmt.Errorf("line %d: key %q is given twice in one object: give it once, since JSON readers disagree on which of the two counts", line, s)
			}
			stack[top].keys[s] = true
			stack[top].wantKey = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, open{keys: map[string]bool{}, wantKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, open{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:top]
			top--
		}
		// A value was read: the object it is in expects a key next.
		if top >= 0 && stack[top].keys != nil {
			stack[top].wantKey = true
		}
	}
}

// ErrNotObject is the error of DecodeObject for JSON that is not an
// object.
var ErrNotObject = errors.New("not a JSON object")

// DecodeObject decodes JSON text that must be one object, strictly: a key
// given twice is an error (CheckUniqueKeys), and its numbers are decoded
// as DecodeJSON decodes them. Malformed JSON is an error that begins
// "not JSON: ", and JSON that is not an object is ErrNotObject.
func DecodeObject(b []byte) (map[string]any, error) {
	if err := CheckUniqueKeys(b); err != nil {
		return nil, err
	}
	v, err := DecodeJSON(b)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, ErrNotObject
	}
	return m, nil
}
