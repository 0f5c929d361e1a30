package jsondec

import (
	"fmt"
	"math/big"
)

// parseDecimal parses a decimal literal ([+-]digits[.digits][e[+-]digits])
// and returns its value rounded half up (away from zero) to scale, as a
// 128-bit two's complement unscaled integer. Like Spark's
// Decimal.set(BigDecimal, precision, scale), a result with more than
// precision digits is an error.
func parseDecimal(s []byte, precision, scale int32) (lo uint64, hi int64, err error) {
	bad := func() error { return fmt.Errorf("invalid decimal %q", s) }
	i, neg := 0, false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	var mant []byte
	frac, seenDigit, seenDot := 0, false, false
	for ; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' {
			seenDigit = true
			if len(mant) > 0 || c != '0' {
				mant = append(mant, c)
			}
			if seenDot {
				frac++
			}
			continue
		}
		if c == '.' && !seenDot {
			seenDot = true
			continue
		}
		break
	}
	if !seenDigit {
		return 0, 0, bad()
	}
	exp := int64(0)
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		start := i
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			if exp < 1<<40 {
				exp = exp*10 + int64(s[i]-'0')
			}
		}
		if i == start {
			return 0, 0, bad()
		}
		if eneg {
			exp = -exp
		}
	}
	if i != len(s) {
		return 0, 0, bad()
	}
	// value = mant * 10^shift once scaled to the target scale.
	shift := exp - int64(frac) + int64(scale)
	n := new(big.Int)
	switch {
	case len(mant) == 0:
	case shift >= 0:
		if int64(len(mant))+shift > int64(precision) {
			return 0, 0, fmt.Errorf("decimal %s does not fit decimal(%d, %d)", s, precision, scale)
		}
		n.SetString(string(mant), 10)
		n.Mul(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(shift), nil))
	case -shift > int64(len(mant)):
		// Below half a unit of the last place: rounds to zero.
	default:
		n.SetString(string(mant), 10)
		q, r := n.QuoRem(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(-shift), nil), new(big.Int))
		r.Mul(r, big.NewInt(2))
		if r.Cmp(new(big.Int).Exp(big.NewInt(10), big.NewInt(-shift), nil)) >= 0 {
			q.Add(q, big.NewInt(1))
		}
		n = q
	}
	if len(n.String()) > int(precision) {
		return 0, 0, fmt.Errorf("decimal %s does not fit decimal(%d, %d)", s, precision, scale)
	}
	if neg {
		n.Neg(n)
	}
	lo, hi = int128(n)
	return lo, hi, nil
}

// int128 splits n (|n| < 2^127) into two's complement halves.
func int128(n *big.Int) (uint64, int64) {
	mask := new(big.Int).SetUint64(^uint64(0))
	u := new(big.Int).Set(n)
	if n.Sign() < 0 {
		u.Add(u, new(big.Int).Lsh(big.NewInt(1), 128))
	}
	lo := new(big.Int).And(u, mask).Uint64()
	hi := new(big.Int).Rsh(u, 64).Uint64()
	return lo, int64(hi)
}
