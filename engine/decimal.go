package engine

import "math/bits"

// DecimalError is why a decimal string was refused. The values are
// distinct so the edge can say exactly what was wrong.
type DecimalError uint8

const (
	ErrDecimalEmpty     DecimalError = 1 // empty string
	ErrDecimalSyntax    DecimalError = 2 // sign, exponent, NaN, spaces, stray characters
	ErrDecimalPrecision DecimalError = 3 // a non-zero digit past the allowed scale
	ErrDecimalRange     DecimalError = 4 // does not fit in int64 at the scale
)

func (e DecimalError) Error() string {
	switch e {
	case ErrDecimalEmpty:
		return "engine: empty decimal"
	case ErrDecimalSyntax:
		return "engine: malformed decimal"
	case ErrDecimalPrecision:
		return "engine: too many decimal places"
	case ErrDecimalRange:
		return "engine: decimal out of range"
	}
	return "engine: bad decimal"
}

// MaxScale is the largest scale ParseFixed accepts.
const MaxScale = 18

var pow10 = [...]int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18}

// ParseFixed parses an unsigned decimal string ("12", "12.5", "0.001") into
// an integer count of 10^-scale units. Digits past the scale are allowed only
// if they are zeros ("1.50" at scale 1 is 15). It allocates nothing. Errors,
// in order of precedence: empty, malformed, too precise, out of range.
func ParseFixed(s []byte, scale int) (int64, error) {
	if len(s) == 0 {
		return 0, ErrDecimalEmpty
	}
	if !wellFormed(s) {
		return 0, ErrDecimalSyntax
	}
	if scale < 0 || scale > MaxScale {
		return 0, ErrDecimalRange
	}
	frac, digits := 0, -1 // digits after the point; -1 before it
	precise, over := false, false
	var v uint64
	const limit = 1<<63 - 1
	for _, c := range s {
		if c == '.' {
			digits = 0
			continue
		}
		if digits >= 0 {
			if digits++; digits > scale {
				precise = precise || c != '0'
				continue
			}
			frac++
		}
		d := uint64(c - '0')
		if v > (limit-d)/10 {
			over = true
			continue
		}
		v = v*10 + d
	}
	if precise {
		return 0, ErrDecimalPrecision
	}
	for ; frac < scale && !over; frac++ {
		if v > limit/10 {
			over = true
		}
		v *= 10
	}
	if over {
		return 0, ErrDecimalRange
	}
	return int64(v), nil
}

// wellFormed reports whether s is digits, optionally followed by a point
// and more digits ("1", "1.5"; not ".5", "1.", "-1", "1e5", " 1").
func wellFormed(s []byte) bool {
	i := 0
	for i < len(s) && s[i]-'0' <= 9 {
		i++
	}
	if i == 0 {
		return false
	}
	if i == len(s) {
		return true
	}
	if s[i] != '.' || i+1 == len(s) {
		return false
	}
	for i++; i < len(s); i++ {
		if s[i]-'0' > 9 {
			return false
		}
	}
	return true
}

// AppendFixed appends v (in 10^-scale units) with exactly scale decimals:
// AppendFixed(nil, 1500, 3) is "1.500". Negative values get a leading '-'.
func AppendFixed(dst []byte, v int64, scale int) []byte {
	u := uint64(v)
	if v < 0 {
		dst = append(dst, '-')
		u = uint64(-v) // -MinInt64 wraps to its own magnitude as uint64
	}
	var buf [24]byte
	i := len(buf)
	for n := 0; n < scale; n++ {
		i--
		buf[i] = byte('0' + u%10)
		u /= 10
	}
	if scale > 0 {
		i--
		buf[i] = '.'
	}
	if u == 0 {
		i--
		buf[i] = '0'
	}
	for u > 0 {
		i--
		buf[i] = byte('0' + u%10)
		u /= 10
	}
	return append(dst, buf[i:]...)
}

// Decimals returns the number of fractional digits of a canonical decimal
// string ("0.010" has 3) and its value at that scale, for config values such
// as tickSize.
func Decimals(s string) (scale int, units int64, err error) {
	dot := -1
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			dot = i
			break
		}
	}
	if dot >= 0 {
		scale = len(s) - dot - 1
	}
	if scale > MaxScale {
		return 0, 0, ErrDecimalPrecision
	}
	units, err = ParseFixed([]byte(s), scale)
	return scale, units, err
}

// mul returns a*b for non-negative a and b, and false if it overflows int64.
func mul(a, b int64) (int64, bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > 1<<63-1 {
		return 0, false
	}
	return int64(lo), true
}

// mulDiv returns floor(a*b/d) for non-negative a, b and positive d, using a
// 128-bit intermediate; false if the quotient overflows int64.
func mulDiv(a, b, d int64) (int64, bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(d) {
		return 0, false
	}
	q, _ := bits.Div64(hi, lo, uint64(d))
	if q > 1<<63-1 {
		return 0, false
	}
	return int64(q), true
}

// mulRate returns floor(a*r/RateOne) for non-negative a and r, as mulDiv
// does, but when the product fits in 64 bits (always, for the prices and
// fee rates of real markets) it divides by the constant, which the
// compiler turns into a multiplication, instead of a 128-bit DIV.
func mulRate(a, r int64) (int64, bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(r))
	if hi == 0 {
		return int64(lo / uint64(RateOne)), true // < 2^64/1e8: fits
	}
	return mulDiv(a, r, RateOne)
}

// MulRate returns floor(a*r/RateOne) for non-negative a and r, false on
// overflow.
func MulRate(a, r int64) (int64, bool) {
	if a < 0 || r < 0 {
		return 0, false
	}
	return mulRate(a, r)
}

// RateScale is the scale of fee rates and price-band ratios: a rate r is
// stored as r * 10^8.
const (
	RateDecimals       = 8
	RateOne      int64 = 1e8
)
