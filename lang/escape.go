package lang

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// EscapeControl returns s with every character that a terminal may act on
// instead of showing written as an escape, so that a person reading text
// from a plan or a tool (an approval prompt, a message, a log) sees all of
// it, and none of it can move the cursor, erase or overwrite what is
// around it, or reorder or hide the text after it. Escaped are:
//
//   - control characters but line feed and tab: C0 (\x1b, \r, \x00), DEL
//     (\x7f) and C1 (\u009b);
//   - format characters, Unicode category Cf: the bidirectional embeddings,
//     overrides and isolates (\u202e, \u2066), the marks (\u200f, \u061c),
//     zero-width characters (\u200b, \u2060, \ufeff) and the like;
//   - the line and paragraph separators \u2028 and \u2029;
//   - bytes that are not UTF-8 (\xff).
//
// \a, \b, \f, \r and \v are written so; other bytes as \xHH; other
// characters as \uHHHH or \UHHHHHHHH. Text with none of them is returned
// as it is, so escaping escaped text changes nothing. A backslash is not
// escaped: the result is for people to read, not for programs to decode.
func EscapeControl(s string) string {
	i := firstToEscape(s)
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if keepASCII(c) {
				b.WriteByte(c)
			} else {
				writeByteEscape(&b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			writeByteEscape(&b, c)
		case escapedRune(r):
			writeRuneEscape(&b, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// firstToEscape returns the offset of the first byte of s that
// EscapeControl changes, or len(s).
func firstToEscape(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if !keepASCII(c) {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || escapedRune(r) {
			return i
		}
		i += n
	}
	return len(s)
}

// keepASCII reports whether an ASCII byte is shown as it is: printable
// characters, line feed and tab.
func keepASCII(c byte) bool {
	return c >= 0x20 && c != 0x7f || c == '\n' || c == '\t'
}

// escapedRune reports whether a character beyond ASCII is escaped: C1
// controls, format characters, and the line and paragraph separators.
func escapedRune(r rune) bool {
	return r <= 0x9f || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Cf, r)
}

const hexDigits = "0123456789abcdef"

func writeByteEscape(b *strings.Builder, c byte) {
	switch c {
	case '\a':
		b.WriteString(`\a`)
	case '\b':
		b.WriteString(`\b`)
	case '\f':
		b.WriteString(`\f`)
	case '\r':
		b.WriteString(`\r`)
	case '\v':
		b.WriteString(`\v`)
	default:
		b.WriteString(`\x`)
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&0xf])
	}
}

func writeRuneEscape(b *strings.Builder, r rune) {
	digits := 4
	if r > 0xffff {
		b.WriteString(`\U`)
		digits = 8
	} else {
		b.WriteString(`\u`)
	}
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		b.WriteByte(hexDigits[r>>shift&0xf])
	}
}

// EscapeControlJSON returns JSON text, such as encoding/json writes, with
// the characters EscapeControl escapes written as JSON escapes (\u001b,
// \u009b, \u202e; a surrogate pair above U+FFFF), and bytes that are not
// UTF-8 as \ufffd. encoding/json escapes the C0 controls, U+2028 and
// U+2029, but writes DEL, the C1 controls and the format characters as
// they are, which a terminal may act on. These characters occur only in
// strings of valid JSON, so the result decodes to the same values. Text
// without them is returned as it is.
func EscapeControlJSON(b []byte) []byte {
	i := 0
	for i < len(b) {
		c := b[i]
		if c < utf8.RuneSelf {
			if c == 0x7f {
				break
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 || escapedRune(r) {
			break
		}
		i += n
	}
	if i == len(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:i]...)
	for i < len(b) {
		c := b[i]
		if c < utf8.RuneSelf {
			if c == 0x7f {
				out = appendJSONEscape(out, 0x7f)
			} else {
				out = append(out, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			out = appendJSONEscape(out, utf8.RuneError)
		case escapedRune(r):
			if r > 0xffff {
				r -= 0x10000
				out = appendJSONEscape(out, 0xd800+r>>10)
				out = appendJSONEscape(out, 0xdc00+r&0x3ff)
			} else {
				out = appendJSONEscape(out, r)
			}
		default:
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}

func appendJSONEscape(out []byte, r rune) []byte {
	return append(out, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}
