package journal

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/obelisk-plan/obelisk/vm"
)

// appendEvent appends the JSON of an event to b: what json.Marshal
// writes, but for the position of "result", which comes last, given as
// result (the encoding of ev.Result, which the step's row holds too).
// It writes the journal's events without reflection; TestAppendEvent
// holds it to json.Marshal for every field of vm.Event.
func appendEvent(b []byte, ev *vm.Event, result []byte) ([]byte, error) {
	if y := ev.Time.Year(); y < 0 || y > 9999 {
		// Outside what RFC 3339 can write: json.Marshal says so.
		_, err := json.Marshal(ev)
		return b, err
	}
	b = append(b, `{"type":`...)
	b = appendString(b, string(ev.Type))
	b = append(b, `,"time":"`...)
	b = ev.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","elapsedNs":`...)
	b = strconv.AppendInt(b, int64(ev.Elapsed), 10)
	b = appendField(b, "step", ev.Step)
	b = appendField(b, "tool", ev.Tool)
	if ev.Attempt != 0 {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, int64(ev.Attempt), 10)
	}
	b = appendField(b, "reason", ev.Reason)
	b = appendField(b, "message", ev.Message)
	if ev.Error != nil {
		b = append(b, `,"error":{"code":`...)
		b = appendString(b, ev.Error.Code)
		b = append(b, `,"message":`...)
		b = appendString(b, ev.Error.Message)
		b = append(b, `,"tool":`...)
		b = appendString(b, ev.Error.Tool)
		b = append(b, `,"step":`...)
		b = appendString(b, ev.Error.Step)
		b = append(b, '}')
	}
	b = appendField(b, "verdict", ev.Verdict)
	if ev.Duration != 0 {
		b = append(b, `,"durationNs":`...)
		b = strconv.AppendInt(b, int64(ev.Duration), 10)
	}
	b = appendField(b, "diff", ev.Diff)
	if ev.Result != nil {
		if result == nil {
			var err error
			if result, err = json.Marshal(ev.Result); err != nil {
				return b, err
			}
		}
		b = append(b, `,"result":`...)
		b = append(b, result...)
	}
	if len(ev.Args) > 0 {
		args, err := json.Marshal(ev.Args)
		if err != nil {
			return b, err
		}
		b = append(b, `,"args":`...)
		b = append(b, args...)
	}
	return append(b, '}'), nil
}

// appendField appends `,"name":"value"` unless value is empty
// (omitempty).
func appendField(b []byte, name, value string) []byte {
	if value == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendString(b, value)
}

// appendString appends s as a JSON string, escaped as encoding/json
// escapes it: control characters, <, > and &, U+2028 and U+2029, and
// invalid UTF-8 as U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
