package jsondec

// Date and timestamp strings, following Spark's JSON defaults: the
// formatter "yyyy-MM-dd'T'HH:mm:ss[.SSS][XXX]" with the fallback to
// DateTimeUtils.stringToTimestamp / stringToDate, in the proleptic
// Gregorian calendar. Region-based zone ids are not supported.

// parseDate accepts yyyy, yyyy-[m]m, yyyy-[m]m-[d]d, optionally followed
// by ' ' or 'T' and anything, with surrounding whitespace.
func parseDate(s []byte) (int64, bool) {
	s = trimSpace(s)
	y, m, d, rest, ok := ymd(s)
	if !ok || (len(rest) > 0 && rest[0] != ' ' && rest[0] != 'T') {
		return 0, false
	}
	return daysFromCivil(y, m, d), true
}

// ymd parses the date part and returns what follows it.
func ymd(s []byte) (y, m, d int64, rest []byte, ok bool) {
	y, s, ok = digits(s, 4, 4)
	if !ok {
		return
	}
	m, d = 1, 1
	if len(s) > 0 && s[0] == '-' {
		if m, s, ok = digits(s[1:], 1, 2); !ok {
			return
		}
		if len(s) > 0 && s[0] == '-' {
			if d, s, ok = digits(s[1:], 1, 2); !ok {
				return
			}
		}
	}
	if m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
		return 0, 0, 0, nil, false
	}
	return y, m, d, s, true
}

// parseTimestamp returns microseconds since the epoch. Without an offset
// in the string, the time is in the zone tzOff (seconds east of UTC); for a
// zone-less target (withZone false) an offset in the string is an error,
// as for Spark's TimestampNTZ.
func parseTimestamp(s []byte, tzOff int64, withZone bool) (int64, bool) {
	s = trimSpace(s)
	y, mo, d, s, ok := ymd(s)
	if !ok {
		return 0, false
	}
	var h, mi, sec, frac int64
	if len(s) > 0 && (s[0] == 'T' || s[0] == ' ') {
		if h, s, ok = digits(s[1:], 1, 2); !ok || len(s) == 0 || s[0] != ':' {
			return 0, false
		}
		if mi, s, ok = digits(s[1:], 1, 2); !ok {
			return 0, false
		}
		if len(s) > 0 && s[0] == ':' {
			if sec, s, ok = digits(s[1:], 1, 2); !ok {
				return 0, false
			}
			if len(s) > 0 && s[0] == '.' {
				s = s[1:]
				n := 0
				for len(s) > 0 && s[0] >= '0' && s[0] <= '9' {
					if n < 6 {
						frac = frac*10 + int64(s[0]-'0')
					}
					n++
					s = s[1:]
				}
				if n == 0 || n > 9 {
					return 0, false
				}
				for ; n < 6; n++ {
					frac *= 10
				}
			}
		}
		if h > 23 || mi > 59 || sec > 59 {
			return 0, false
		}
	}
	off := tzOff
	if len(s) > 0 {
		if !withZone {
			return 0, false
		}
		if off, ok = parseZone(s); !ok {
			return 0, false
		}
	}
	secs := daysFromCivil(y, mo, d)*86400 + h*3600 + mi*60 + sec - off
	return secs*1e6 + frac, true
}

// parseZone accepts Z, UTC, GMT, UT (optionally followed by an offset) and
// offsets ±h, ±hh, ±hhmm, ±hh:mm, ±hh:mm:ss; returns seconds east of UTC.
func parseZone(s []byte) (int64, bool) {
	for _, p := range []string{"UTC", "GMT", "UT", "Z"} {
		if len(s) >= len(p) && string(s[:len(p)]) == p {
			s = s[len(p):]
			if len(s) == 0 {
				return 0, true
			}
			if p == "Z" {
				return 0, false
			}
			break
		}
	}
	if len(s) < 2 || (s[0] != '+' && s[0] != '-') {
		return 0, false
	}
	sign := int64(1)
	if s[0] == '-' {
		sign = -1
	}
	s = s[1:]
	var h, m, sec int64
	var ok bool
	switch {
	case len(s) == 4 && s[2] != ':': // hhmm
		if h, _, ok = digits(s[:2], 2, 2); !ok {
			return 0, false
		}
		if m, _, ok = digits(s[2:], 2, 2); !ok {
			return 0, false
		}
	default:
		if h, s, ok = digits(s, 1, 2); !ok {
			return 0, false
		}
		if len(s) > 0 {
			if s[0] != ':' {
				return 0, false
			}
			if m, s, ok = digits(s[1:], 2, 2); !ok {
				return 0, false
			}
			if len(s) > 0 {
				if s[0] != ':' {
					return 0, false
				}
				if sec, s, ok = digits(s[1:], 2, 2); !ok || len(s) > 0 {
					return 0, false
				}
			}
		}
	}
	if h > 18 || m > 59 || sec > 59 {
		return 0, false
	}
	return sign * (h*3600 + m*60 + sec), true
}

// digits parses between min and max decimal digits at the start of s.
func digits(s []byte, min, max int) (int64, []byte, bool) {
	var v int64
	n := 0
	for n < len(s) && n < max && s[n] >= '0' && s[n] <= '9' {
		v = v*10 + int64(s[n]-'0')
		n++
	}
	if n < min {
		return 0, s, false
	}
	return v, s[n:], true
}

func trimSpace(s []byte) []byte {
	for len(s) > 0 && s[0] <= ' ' {
		s = s[1:]
	}
	for len(s) > 0 && s[len(s)-1] <= ' ' {
		s = s[:len(s)-1]
	}
	return s
}

func daysIn(y, m int64) int64 {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is days since 1970-01-01 in the proleptic Gregorian
// calendar (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}
