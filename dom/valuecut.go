package dom

import (
	"strconv"
	"unicode/utf8"
)

// cutValue cuts a field's value at limit runes and returns how many runes
// were left out (0 when it fits). The element line then says so (see
// moreChars): the model must know that what it reads is not all, and the
// read_value action returns the whole value.
func cutValue(v string, limit int) (string, int) {
	n := utf8.RuneCountInString(v)
	if n <= limit {
		return v, 0
	}
	i := 0
	for k := range v {
		if i == limit {
			return v[:k], n - limit
		}
		i++
	}
	return v, 0
}

// moreChars is the mark written right after a cut value:
// "… 1,240 more chars (read_value)".
func moreChars(n int) string {
	return "… " + thousands(n) + " more chars (read_value)"
}

// thousands writes n with a comma between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 || len(s) <= 3 {
		return s
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
