package keys

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		text bool
		n    int
		mask int64
	}{
		{"Enter", false, 1, 0},
		{"Control+a", false, 1, 2},
		{"ctrl+shift+k", false, 1, 10},
		{"Alt+Meta+x", false, 1, 5},
		{"Control++", false, 1, 2},
		{"hello", true, 0, 0},
		{"I am", true, 0, 0},
		{"Tab Shift+Tab", false, 2, 0},
		{"Control+Nope", true, 0, 0},
		{"a", false, 1, 0},
		{"", true, 0, 0},
	} {
		st, text := Parse(c.in)
		if text != c.text || len(st) != c.n {
			t.Fatalf("%q: text %v strokes %d, want %v %d", c.in, text, len(st), c.text, c.n)
		}
		if c.n == 1 && st[0].Mask != c.mask {
			t.Fatalf("%q: mask %d, want %d", c.in, st[0].Mask, c.mask)
		}
	}
	st, _ := Parse("Control++")
	if st[0].Key.Name != "+" {
		t.Fatalf("Control++ key %q", st[0].Key.Name)
	}
	st, _ = Parse("Control+A")
	if st[0].Key.Name != "a" || st[0].Key.Code != "KeyA" {
		t.Fatalf("Control+A: key %q code %q", st[0].Key.Name, st[0].Key.Code)
	}
	st, _ = Parse("shift+a")
	if st[0].Key.Name != "A" {
		t.Fatalf("shift+a: key %q", st[0].Key.Name)
	}
}

func TestNamedAndChar(t *testing.T) {
	for alias, want := range map[string]string{"esc": "Escape", "PgDn": "PageDown", "F5": "F5", "return": "Enter", "up": "ArrowUp"} {
		if k, ok := Named(alias); !ok || k.Name != want {
			t.Errorf("Named(%q) = %q, %v; want %q", alias, k.Name, ok, want)
		}
	}
	if _, ok := Named("nope"); ok {
		t.Error("Named(nope) found a key")
	}
	if k, ok := Char('?'); !ok || k.Code != "Slash" || k.Text != "?" {
		t.Errorf("Char('?') = %+v, %v", k, ok)
	}
	if _, ok := Char('é'); ok {
		t.Error("Char('é') has a US key")
	}
}
