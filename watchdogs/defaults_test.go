package watchdogs

import "testing"

func TestDefaultsNamesAndOrder(t *testing.T) {
	want := Names()
	got := Defaults()
	if len(got) != len(want) {
		t.Fatalf("%d defaults, want %d", len(got), len(want))
	}
	for i, w := range got {
		if w.Name() != want[i] {
			t.Errorf("default %d is %q, want %q", i, w.Name(), want[i])
		}
	}
}
