package cdp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Preferences are merged into a profile's file: the profile's other
// preferences, nested ones included, are kept; the given ones win; a
// profile without the file gets one; a file that is not JSON is an error,
// left as it was.
func TestWritePreferences(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "Default", "Preferences")
	if err := writePreferences(dir, map[string]any{"webrtc.ip_handling_policy": "disable_non_proxied_udp"}); err != nil {
		t.Fatal(err)
	}
	read := func() map[string]any {
		t.Helper()
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		return doc
	}
	if got := read()["webrtc"].(map[string]any)["ip_handling_policy"]; got != "disable_non_proxied_udp" {
		t.Fatalf("new file: webrtc.ip_handling_policy = %v", got)
	}

	if err := os.WriteFile(file, []byte(`{"webrtc":{"multiple_routes_enabled":false,"ip_handling_policy":"default"},"profile":{"name":"user"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writePreferences(dir, map[string]any{"webrtc.ip_handling_policy": "disable_non_proxied_udp", "a.b.c": 1}); err != nil {
		t.Fatal(err)
	}
	doc := read()
	webrtc := doc["webrtc"].(map[string]any)
	if webrtc["ip_handling_policy"] != "disable_non_proxied_udp" || webrtc["multiple_routes_enabled"] != false ||
		doc["profile"].(map[string]any)["name"] != "user" || doc["a"].(map[string]any)["b"].(map[string]any)["c"] != float64(1) {
		t.Fatalf("merged file: %v", doc)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "Default", "Preferences.*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}

	if err := os.WriteFile(file, []byte(`not json`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writePreferences(dir, map[string]any{"x": 1}); err == nil || !strings.Contains(err.Error(), "preferences") {
		t.Fatalf("a corrupt file: err %v", err)
	}
	if raw, _ := os.ReadFile(file); string(raw) != "not json" {
		t.Fatalf("a corrupt file was changed: %q", raw)
	}
}
