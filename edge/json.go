package edge

import (
	"unicode/utf8"
)

// scanner is a small, allocation-free JSON reader for request bodies. It
// reads objects key by key; string values alias the body unless they hold
// escapes, which are decoded into scratch. Any syntax error sets bad, and
// so does a key given twice in one object (two readers could take either
// value: "quantity":"0.01",...,"quantity":"5") or more than maxKeys keys
// in one object.
//
//	d.reset(body)
//	if !d.objectStart() { ... }
//	for d.nextKey() { switch string(d.key) { ... } }
//	if !d.end() { ... }
type scanner struct {
	b       []byte
	i       int
	bad     bool // malformed JSON
	depth   int
	first   bool
	key     []byte
	scratch []byte
	keys    [maxDepth][maxKeys][]byte // the keys read so far in each open object
	nkeys   [maxDepth]uint8
}

const (
	maxDepth = 8
	maxKeys  = 16 // keys in one object: no request has more than 9
)

func (d *scanner) reset(b []byte) {
	d.b, d.i, d.bad, d.depth, d.first, d.key = b, 0, false, 0, false, nil
	d.scratch = d.scratch[:0]
}

func (d *scanner) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, 0 at the end.
func (d *scanner) peek() byte {
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *scanner) fail() bool { d.bad = true; return false }

// objectStart consumes '{'.
func (d *scanner) objectStart() bool { return d.open('{') }

// arrayStart consumes '['.
func (d *scanner) arrayStart() bool { return d.open('[') }

// open consumes the bracket c and enters one nesting level.
func (d *scanner) open(c byte) bool {
	if d.bad || d.peek() != c {
		return d.fail()
	}
	d.i++
	d.depth++
	if d.depth > maxDepth {
		return d.fail()
	}
	d.nkeys[d.depth-1] = 0
	d.first = true
	return true
}

// more reports whether another member or element follows in the current
// level, whose closing bracket is c, and consumes the ',' before it; at c
// it leaves the level. p is the next byte (peek): read by the caller, more
// stays small enough to be inlined into nextKey and nextElem.
func (d *scanner) more(p, c byte) bool {
	switch {
	case d.bad:
		return false
	case p == c:
		d.i++
		d.depth--
		return false
	case d.first:
		d.first = false
		return true
	case p != ',':
		return d.fail()
	}
	d.i++
	return true
}

// nextKey reads the next key and its ':' into d.key; false at '}' or on error.
func (d *scanner) nextKey() bool {
	if !d.more(d.peek(), '}') {
		return false
	}
	k, ok := d.rawString()
	if !ok {
		return d.fail()
	}
	if d.peek() != ':' {
		return d.fail()
	}
	d.i++
	d.key = k
	seen := &d.keys[d.depth-1]
	n := d.nkeys[d.depth-1]
	for _, p := range seen[:n] {
		if string(p) == string(k) {
			return d.fail() // a key given twice
		}
	}
	if int(n) == maxKeys {
		return d.fail()
	}
	seen[n] = k
	d.nkeys[d.depth-1] = n + 1
	return true
}

// nextElem reports whether another array element follows (and consumes ',').
func (d *scanner) nextElem() bool {
	if !d.more(d.peek(), ']') {
		return false
	}
	if d.peek() == ']' { // after a ',': a trailing comma
		return d.fail()
	}
	return true
}

// end reports whether only white space follows a complete document.
func (d *scanner) end() bool {
	if d.bad || d.depth != 0 {
		return false
	}
	d.ws()
	return d.i == len(d.b)
}

// kind of the next value: 's' string, 'n' number, 'b' bool, 'z' null,
// '{' object, '[' array, 0 invalid.
func (d *scanner) kind() byte {
	switch c := d.peek(); {
	case c == '"':
		return 's'
	case c == '-' || c >= '0' && c <= '9':
		return 'n'
	case c == 't' || c == 'f':
		return 'b'
	case c == 'n':
		return 'z'
	case c == '{' || c == '[':
		return c
	}
	return 0
}

// str reads a string value.
func (d *scanner) str() ([]byte, bool) {
	if d.bad {
		return nil, false
	}
	s, ok := d.rawString()
	if !ok {
		d.bad = true
	}
	return s, ok
}

func (d *scanner) rawString() ([]byte, bool) {
	if d.peek() != '"' {
		return nil, false
	}
	d.i++
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			if !utf8.Valid(s) {
				return nil, false
			}
			return s, true
		case c == '\\':
			return d.escapedString(start)
		case c < 0x20:
			return nil, false
		}
		d.i++
	}
	return nil, false
}

func (d *scanner) escapedString(start int) ([]byte, bool) {
	from := len(d.scratch)
	d.scratch = append(d.scratch, d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			s := d.scratch[from:]
			if !utf8.Valid(s) {
				return nil, false
			}
			return s, true
		case c < 0x20:
			return nil, false
		case c == '\\':
			d.i++
			if d.i >= len(d.b) {
				return nil, false
			}
			e := d.b[d.i]
			d.i++
			switch e {
			case '"', '\\', '/':
				d.scratch = append(d.scratch, e)
			case 'b':
				d.scratch = append(d.scratch, '\b')
			case 'f':
				d.scratch = append(d.scratch, '\f')
			case 'n':
				d.scratch = append(d.scratch, '\n')
			case 'r':
				d.scratch = append(d.scratch, '\r')
			case 't':
				d.scratch = append(d.scratch, '\t')
			case 'u':
				if d.i+4 > len(d.b) {
					return nil, false
				}
				var r rune
				for _, h := range d.b[d.i : d.i+4] {
					r <<= 4
					switch {
					case h >= '0' && h <= '9':
						r |= rune(h - '0')
					case h >= 'a' && h <= 'f':
						r |= rune(h - 'a' + 10)
					case h >= 'A' && h <= 'F':
						r |= rune(h - 'A' + 10)
					default:
						return nil, false
					}
				}
				d.i += 4
				d.scratch = utf8.AppendRune(d.scratch, r)
			default:
				return nil, false
			}
		default:
			d.scratch = append(d.scratch, c)
			d.i++
		}
	}
	return nil, false
}

// number reads a JSON number's text (validated against the JSON grammar).
func (d *scanner) number() ([]byte, bool) {
	if d.bad {
		return nil, false
	}
	d.ws()
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	digits := func() int {
		n := 0
		for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	lead := d.i
	if n := digits(); n == 0 || n > 1 && d.b[lead] == '0' { // no leading zeros
		return nil, d.fail()
	}
	if d.i < len(d.b) && d.b[d.i] == '.' {
		d.i++
		if digits() == 0 {
			return nil, d.fail()
		}
	}
	if d.i < len(d.b) && (d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		d.i++
		if d.i < len(d.b) && (d.b[d.i] == '+' || d.b[d.i] == '-') {
			d.i++
		}
		if digits() == 0 {
			return nil, d.fail()
		}
	}
	return d.b[start:d.i], true
}

// literal reads true, false or null.
func (d *scanner) literal() (byte, bool) {
	d.ws()
	for _, l := range [...]string{"true", "false", "null"} {
		if len(d.b)-d.i >= len(l) && string(d.b[d.i:d.i+len(l)]) == l {
			d.i += len(l)
			return l[0], true
		}
	}
	return 0, d.fail()
}

// skip reads and discards any value.
func (d *scanner) skip() bool {
	switch d.kind() {
	case 's':
		_, ok := d.str()
		return ok
	case 'n':
		_, ok := d.number()
		return ok
	case 'b', 'z':
		_, ok := d.literal()
		return ok
	case '{':
		if !d.objectStart() {
			return false
		}
		for d.nextKey() {
			if !d.skip() {
				return false
			}
		}
		return !d.bad
	case '[':
		if !d.arrayStart() {
			return false
		}
		for d.nextElem() {
			if !d.skip() {
				return false
			}
		}
		return !d.bad
	}
	return d.fail()
}

// parseInt parses a non-negative decimal integer without sign or spaces.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// appendString appends s as a JSON string.
func appendString(dst []byte, s []byte) []byte {
	dst = append(dst, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			const hex = "0123456789abcdef"
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

func appendStr(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			const hex = "0123456789abcdef"
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
