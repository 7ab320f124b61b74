package lang

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// tokenKind is the kind of a lexical token.
type tokenKind uint8

// The token kinds.
const (
	tokEOF         tokenKind = iota
	tokNewline               // a line break outside a string
	tokComment               // "# …" or "// …" to the end of the line
	tokIdent                 // name, keyword or CEL identifier
	tokInt                   // 42
	tokFloat                 // 4.2, 1e3
	tokDuration              // 200ms, 1h30m (a number directly followed by letters)
	tokString                // "…" or '…' (also CEL's triple-quoted and r/b-prefixed forms)
	tokDagger                // † or $, which start a reference
	tokArrow                 // ->
	tokOrOr                  // ||
	tokLParen                // (
	tokRParen                // )
	tokLBrack                // [
	tokRBrack                // ]
	tokLBrace                // {
	tokRBrace                // }
	tokComma                 // ,
	tokColon                 // :
	tokSemicolon             // ;
	tokDot                   // .
	tokQuestion              // ?
	tokPipe                  // |
	tokAssign                // =
	tokMinus                 // -
	tokOperator              // any other operator character run used by CEL: + * / % ! < > <= >= == != &&
	tokIllegal               // a character or construct that cannot start a token
	tokEndOfBuffer           // the scanned text ends here but more may follow (streaming)
)

var tokenNames = [...]string{
	tokEOF: "end of file", tokNewline: "newline", tokComment: "comment", tokIdent: "identifier",
	tokInt: "integer", tokFloat: "number", tokDuration: "duration", tokString: "string",
	tokDagger: "†", tokArrow: "->", tokOrOr: "||", tokLParen: "(", tokRParen: ")", tokLBrack: "[",
	tokRBrack: "]", tokLBrace: "{", tokRBrace: "}", tokComma: ",", tokColon: ":", tokSemicolon: ";",
	tokDot: ".", tokQuestion: "?", tokPipe: "|", tokAssign: "=", tokMinus: "-", tokOperator: "operator",
	tokIllegal: "illegal character", tokEndOfBuffer: "end of buffer",
}

// String names the kind as a message would ("identifier", "->").
func (k tokenKind) String() string {
	if int(k) < len(tokenNames) {
		return tokenNames[k]
	}
	return "token"
}

// token is one lexical token and its place in the source.
type token struct {
	Kind tokenKind
	Span Span
	// Text is the token's source text.
	Text string
	// Err is set on Illegal tokens and unterminated strings: what is wrong.
	Err string
}

// scanner turns source text into tokens. It computes the line and column of
// every token as it goes, counting columns in code points.
type scanner struct {
	src       []byte
	off       int
	line      int
	lineStart int // offset of the first byte of the current line
	adjust    int // continuation bytes of multi-byte characters seen on this line
	// partial is set when src may be followed by more text: a token that
	// touches the end of src becomes tokEndOfBuffer instead of being cut short.
	partial bool
	// text, when set, is src as a string; token texts are sliced from it
	// instead of being copied one by one.
	text string
}

func newScanner(src []byte, start, line int, partial bool) *scanner {
	s := &scanner{src: src, off: start, line: line, partial: partial}
	ls := start
	for ls > 0 && src[ls-1] != '\n' {
		ls--
	}
	s.lineStart = ls
	s.adjust = runeAdjust(src[ls:start])
	return s
}

// runeAdjust is the number of bytes of b beyond one per character: the
// difference between byte and character columns. An invalid byte counts
// as one character, as utf8.DecodeRune reads it.
func runeAdjust(b []byte) int { return len(b) - utf8.RuneCount(b) }

func (s *scanner) pos() Pos {
	return Pos{Offset: s.off, Line: s.line, Column: s.off - s.lineStart - s.adjust + 1}
}

// newline records that the byte at s.off-1 was a line break.
func (s *scanner) newline() {
	s.line++
	s.lineStart = s.off
	s.adjust = 0
}

// advanceRune moves past one UTF-8 encoded character and returns it.
func (s *scanner) advanceRune() rune {
	b := s.src[s.off]
	if b < utf8.RuneSelf {
		s.off++
		if b == '\n' {
			s.newline()
		}
		return rune(b)
	}
	r, n := utf8.DecodeRune(s.src[s.off:])
	s.off += n
	s.adjust += n - 1
	return r
}

const daggerRune = '†'

// next returns the next token, skipping spaces and tabs.
func (s *scanner) next() token {
	for s.off < len(s.src) {
		b := s.src[s.off]
		if b == ' ' || b == '\t' || b == '\r' || b == '\f' {
			s.off++
			continue
		}
		break
	}
	start := s.pos()
	if s.off >= len(s.src) {
		if s.partial {
			return token{Kind: tokEndOfBuffer, Span: Span{start, start}}
		}
		return token{Kind: tokEOF, Span: Span{start, start}}
	}
	b := s.src[s.off]
	kind := tokIllegal
	var errMsg string
	switch {
	case b == '\n':
		s.off++
		s.newline()
		kind = tokNewline
	case b == '#':
		s.skipLine()
		kind = tokComment
	case b == '/' && s.peekByte(1) == '/':
		s.skipLine()
		kind = tokComment
	case isIdentStart(b):
		kind, errMsg = s.scanIdentOrPrefixedString()
	case b >= utf8.RuneSelf:
		if s.partial && !utf8.FullRune(s.src[s.off:]) {
			// A character split across reads: wait for the rest of it.
			return token{Kind: tokEndOfBuffer, Span: Span{start, start}}
		}
		r, _ := utf8.DecodeRune(s.src[s.off:])
		switch {
		case r == daggerRune:
			s.advanceRune()
			kind = tokDagger
		case unicode.IsLetter(r):
			kind, errMsg = s.scanIdentOrPrefixedString()
		default:
			s.advanceRune()
			errMsg = "unexpected character " + quoteRune(r)
		}
	case isDigit(b):
		kind = s.scanNumber()
	case b == '.' && isDigit(s.peekByte(1)):
		kind = s.scanNumber()
	case b == '"' || b == '\'':
		kind, errMsg = s.scanString()
	default:
		kind = s.scanPunct()
		if kind == tokIllegal {
			r := s.advanceRune()
			errMsg = "unexpected character " + quoteRune(r)
			if r == '&' {
				errMsg += ": the logical and is written &&"
			}
		}
	}
	var text string
	if s.text != "" {
		text = s.text[start.Offset:s.off]
	} else {
		text = string(s.src[start.Offset:s.off])
	}
	tok := token{Kind: kind, Span: Span{start, s.pos()}, Text: text, Err: errMsg}
	if s.partial && s.off >= len(s.src) && mayGrow(kind) {
		// The token may continue in text that has not arrived yet.
		return token{Kind: tokEndOfBuffer, Span: Span{start, start}}
	}
	return tok
}

// mayGrow reports whether a token of this kind that ends the text read so
// far could be longer once more text arrives ("-" may become "->", "ab" may
// become "abc", a comment runs to the end of its line).
func mayGrow(k tokenKind) bool {
	switch k {
	case tokNewline, tokLParen, tokRParen, tokLBrack, tokRBrack, tokLBrace, tokRBrace,
		tokComma, tokColon, tokSemicolon, tokQuestion, tokDagger, tokArrow, tokOrOr:
		return false
	}
	return true
}

func (s *scanner) peekByte(k int) byte {
	if s.off+k < len(s.src) {
		return s.src[s.off+k]
	}
	return 0
}

func (s *scanner) skipLine() {
	start := s.off
	for s.off < len(s.src) && s.src[s.off] != '\n' {
		s.off++
	}
	s.adjust += runeAdjust(s.src[start:s.off])
}

func isIdentStart(b byte) bool {
	return b == '_' || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z')
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func isIdentByte(b byte) bool { return isIdentStart(b) || isDigit(b) }

func (s *scanner) scanIdentOrPrefixedString() (tokenKind, string) {
	start := s.off
	for s.off < len(s.src) {
		b := s.src[s.off]
		if isIdentByte(b) {
			s.off++
			continue
		}
		if b >= utf8.RuneSelf {
			r, n := utf8.DecodeRune(s.src[s.off:])
			if r != daggerRune && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
				s.off += n
				s.adjust += n - 1
				continue
			}
		}
		break
	}
	// CEL string prefixes: r"…", b'…', rb"…" and so on.
	if s.off < len(s.src) && (s.src[s.off] == '"' || s.src[s.off] == '\'') && s.off-start <= 2 {
		switch string(s.src[start:s.off]) {
		case "r", "R", "b", "B", "rb", "rB", "Rb", "RB", "br", "bR", "Br", "BR":
			raw := false
			for _, c := range s.src[start:s.off] {
				if c == 'r' || c == 'R' {
					raw = true
				}
			}
			return s.scanQuoted(raw)
		}
	}
	return tokIdent, ""
}

func (s *scanner) scanNumber() tokenKind {
	kind := tokInt
	if s.src[s.off] == '0' && (s.peekByte(1) == 'x' || s.peekByte(1) == 'X') {
		s.off += 2
		for s.off < len(s.src) && isHex(s.src[s.off]) {
			s.off++
		}
		if s.off < len(s.src) && (s.src[s.off] == 'u' || s.src[s.off] == 'U') {
			s.off++ // CEL unsigned suffix
		}
		return tokInt
	}
	for s.off < len(s.src) && isDigit(s.src[s.off]) {
		s.off++
	}
	if s.off < len(s.src) && s.src[s.off] == '.' && isDigit(s.peekByte(1)) {
		kind = tokFloat
		s.off++
		for s.off < len(s.src) && isDigit(s.src[s.off]) {
			s.off++
		}
	}
	if s.off < len(s.src) && (s.src[s.off] == 'e' || s.src[s.off] == 'E') {
		k := 1
		if c := s.peekByte(1); c == '+' || c == '-' {
			k = 2
		}
		if isDigit(s.peekByte(k)) {
			kind = tokFloat
			s.off += k
			for s.off < len(s.src) && isDigit(s.src[s.off]) {
				s.off++
			}
		}
	}
	// A number directly followed by letters is a duration (200ms, 1h30m) or
	// a CEL unsigned literal (5u); the parser decides which it accepts.
	if (s.off < len(s.src) && isIdentStart(s.src[s.off])) || (s.peekByte(0) == 0xC2 && s.peekByte(1) == 0xB5) {
		for s.off < len(s.src) {
			b := s.src[s.off]
			if isIdentByte(b) || b == '.' && isDigit(s.peekByte(1)) {
				s.off++
				continue
			}
			if b == 0xC2 && s.peekByte(1) == 0xB5 { // µ
				s.off += 2
				s.adjust++
				continue
			}
			break
		}
		return tokDuration
	}
	return kind
}

func isHex(b byte) bool {
	return isDigit(b) || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F')
}

func (s *scanner) scanString() (tokenKind, string) { return s.scanQuoted(false) }

// scanQuoted scans a quoted string starting at s.off: '…', "…", or CEL's
// triple-quoted forms. Escapes are checked later, when the value is needed.
func (s *scanner) scanQuoted(raw bool) (tokenKind, string) {
	q := s.src[s.off]
	triple := s.peekByte(1) == q && s.peekByte(2) == q
	if triple {
		s.off += 3
	} else {
		s.off++
	}
	start := s.off
	unicodeEscape := false // a \u or \U escape, to check once the string ends
	closed := func() string {
		if unicodeEscape {
			return surrogateError(s.src[start:s.off])
		}
		return ""
	}
	for s.off < len(s.src) {
		b := s.src[s.off]
		switch {
		case b == '\\' && !raw:
			s.off++
			if s.off < len(s.src) {
				if c := s.src[s.off]; c == 'u' || c == 'U' {
					unicodeEscape = true
				}
				s.advanceRune()
			}
			continue
		case b == q:
			if !triple {
				msg := closed()
				s.off++
				return tokString, msg
			}
			if s.peekByte(1) == q && s.peekByte(2) == q {
				msg := closed()
				s.off += 3
				return tokString, msg
			}
			s.off++
			continue
		case b == '\n':
			if !triple {
				return tokString, "string not terminated before the end of the line"
			}
			s.off++
			s.newline()
			continue
		}
		if b >= utf8.RuneSelf {
			s.advanceRune()
			continue
		}
		s.off++
	}
	return tokString, "string not terminated before the end of the file"
}

// surrogateError checks the \u and \U escapes of a string's text: a
// surrogate (U+D800 to U+DFFF) is only half of a character, and is
// allowed only as a \uD800-\uDBFF escape directly followed by a
// \uDC00-\uDFFF one, the pair JSON writes for a character beyond U+FFFF.
// It returns the message of the first escape that is no character, or "".
// Decoding it to U+FFFD instead would hide the mistake, and a decoder that
// takes the next escape as the second half loses a character.
func surrogateError(text []byte) string {
	hex := func(i, n int) (rune, bool) {
		if i+n > len(text) {
			return 0, false
		}
		var r rune
		for _, c := range text[i : i+n] {
			switch {
			case c >= '0' && c <= '9':
				r = r<<4 | rune(c-'0')
			case c >= 'a' && c <= 'f':
				r = r<<4 | rune(c-'a'+10)
			case c >= 'A' && c <= 'F':
				r = r<<4 | rune(c-'A'+10)
			default:
				return 0, false // not an escape of a character: unquote says why
			}
		}
		return r, true
	}
	for i := 0; i+1 < len(text); i++ {
		if text[i] != '\\' {
			continue
		}
		i++
		switch text[i] {
		case 'u':
			r, ok := hex(i+1, 4)
			switch {
			case !ok || r < 0xD800 || r > 0xDFFF:
			case r < 0xDC00 && i+10 < len(text) && text[i+5] == '\\' && text[i+6] == 'u':
				if lo, ok := hex(i+7, 4); ok && lo >= 0xDC00 && lo <= 0xDFFF {
					i += 10 // a pair
					break
				}
				fallthrough
			default:
				return loneSurrogate(string(text[i-1 : i+5]))
			}
		case 'U':
			if r, ok := hex(i+1, 8); ok && (r >= 0xD800 && r <= 0xDFFF || r > unicode.MaxRune) {
				return fmt.Sprintf("\\%s in string is not a character: a code point is at most U+10FFFF and not a surrogate (U+D800 to U+DFFF)", text[i:i+9])
			}
		}
	}
	return ""
}

// loneSurrogate is the message for an escape of half a surrogate pair.
func loneSurrogate(esc string) string {
	return fmt.Sprintf("lone surrogate %s in string: a \\uD800-\\uDBFF escape must be directly followed by a \\uDC00-\\uDFFF one, the pair that makes a character beyond U+FFFF; write the character itself, or as \\UXXXXXXXX", esc)
}

func (s *scanner) scanPunct() tokenKind {
	b := s.src[s.off]
	two := func(next byte) bool { return s.peekByte(1) == next }
	switch b {
	case '$':
		s.off++
		return tokDagger
	case '(':
		s.off++
		return tokLParen
	case ')':
		s.off++
		return tokRParen
	case '[':
		s.off++
		return tokLBrack
	case ']':
		s.off++
		return tokRBrack
	case '{':
		s.off++
		return tokLBrace
	case '}':
		s.off++
		return tokRBrace
	case ',':
		s.off++
		return tokComma
	case ':':
		s.off++
		return tokColon
	case ';':
		s.off++
		return tokSemicolon
	case '.':
		s.off++
		return tokDot
	case '?':
		s.off++
		return tokQuestion
	case '-':
		if two('>') {
			s.off += 2
			return tokArrow
		}
		s.off++
		return tokMinus
	case '|':
		if two('|') {
			s.off += 2
			return tokOrOr
		}
		s.off++
		return tokPipe
	case '=':
		if two('=') {
			s.off += 2
			return tokOperator
		}
		s.off++
		return tokAssign
	case '&':
		if two('&') {
			s.off += 2
			return tokOperator
		}
	case '!', '<', '>':
		if two('=') {
			s.off += 2
		} else {
			s.off++
		}
		return tokOperator
	case '+', '*', '/', '%':
		s.off++
		return tokOperator
	}
	return tokIllegal
}

func quoteRune(r rune) string {
	if r == utf8.RuneError {
		return "(invalid UTF-8)"
	}
	if unicode.IsPrint(r) {
		return "'" + string(r) + "'"
	}
	return "U+" + hex4(r)
}

func hex4(r rune) string {
	const digits = "0123456789ABCDEF"
	var b []byte
	for shift := 12; shift >= 0; shift -= 4 {
		b = append(b, digits[(r>>uint(shift))&0xF])
	}
	if r > 0xFFFF {
		return string(digits[(r>>16)&0xF]) + string(b)
	}
	return string(b)
}

// scanAll returns the tokens of src, ending with an EOF token. Comments and
// newlines are included; illegal characters come back as Illegal tokens with
// Err set. Scan never fails.
func scanAll(src []byte) []token {
	s := newScanner(src, 0, 1, false)
	var toks []token
	for {
		t := s.next()
		toks = append(toks, t)
		if t.Kind == tokEOF {
			return toks
		}
	}
}
