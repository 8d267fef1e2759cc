package dom

import (
	"strings"
	"testing"
)

// A long textarea value is cut at ValueCap and the line says how much is
// left out, with thousands grouped; a quoted (multi-line) value is cut
// inside its quotes, the mark after them; a value that fits has no mark,
// and a password is never shown, cut or not.
func TestValueCutIsMarked(t *testing.T) {
	long := strings.Repeat("word ", 348) // 1,740 chars
	multi := strings.Repeat("line\n", 200)
	res, _ := render(t,
		E("textarea").A("id", "a").At(0, 0, 200, 60).TVal(long),
		E("textarea").A("id", "b").At(0, 70, 200, 60).TVal(multi),
		E("input").A("id", "c").At(0, 140, 200, 30).Val(strings.Repeat("y", 500)),
		E("input").A("id", "d", "type", "password").At(0, 180, 200, 30).Val(strings.Repeat("s", 900)),
	)
	// The cut ends in a space, so the value is quoted.
	if l := lineWith(res.Text, "id=a"); !strings.Contains(l, `value="`+long[:500]+`"… 1,240 more chars (read_value)`) {
		t.Fatalf("long value: %q", l)
	}
	if l := lineWith(res.Text, "id=b"); !strings.Contains(l, `value="`+strings.ReplaceAll(multi[:500], "\n", `\n`)+`"… 500 more chars (read_value)`) {
		t.Fatalf("multi-line value: %q", l)
	}
	if l := lineWith(res.Text, "id=c"); strings.Contains(l, "more chars") || !strings.Contains(l, strings.Repeat("y", 500)) {
		t.Fatalf("a value that fits: %q", l)
	}
	if l := lineWith(res.Text, "id=d"); strings.Contains(l, "sss") || strings.Contains(l, "more chars") {
		t.Fatalf("password shown: %q", l)
	}
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1240: "1,240", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
