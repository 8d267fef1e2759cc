package main

import (
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/internal/imgsize"
)

// run --screenshot-format webp --screenshot-quality 60 --screenshot-detail
// low: the step request carries a WebP screenshot with OpenAI's low
// detail, sized to the 512×512 low-detail box; bad values are usage
// errors.
func TestRunScreenshotFlags(t *testing.T) {
	model := newModelServer(t)
	model.script(`{"memory":"A blank page.","action":[{"done":{"text":"ok","success":true}}]}`)
	out := filepath.Join(t.TempDir(), "run")
	r := cli(t, []string{"OPENAI_API_KEY=test"}, "run", "--model", "openai:test", "--base-url", model.URL+"/v1",
		"--vision", "on", "--screenshot-format", "webp", "--screenshot-quality", "60", "--screenshot-detail", "low", "--out", out, "--json", "say ok")
	if r.code != 0 {
		t.Fatalf("run exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	model.mu.Lock()
	defer model.mu.Unlock()
	if len(model.bodies) != 1 {
		t.Fatalf("%d step requests", len(model.bodies))
	}
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(model.bodies[0], &req); err != nil {
		t.Fatal(err)
	}
	var found int
	for _, m := range req.Messages {
		var parts []struct {
			Type     string `json:"type"`
			ImageURL *struct {
				URL    string `json:"url"`
				Detail string `json:"detail"`
			} `json:"image_url"`
		}
		if json.Unmarshal(m.Content, &parts) != nil {
			continue // a string content
		}
		for _, p := range parts {
			if p.ImageURL == nil {
				continue
			}
			found++
			data, ok := strings.CutPrefix(p.ImageURL.URL, "data:image/webp;base64,")
			if !ok || p.ImageURL.Detail != "low" {
				t.Fatalf("image %.40s… detail %q, want a WebP with detail low", p.ImageURL.URL, p.ImageURL.Detail)
			}
			b, err := base64.StdEncoding.DecodeString(data)
			if err != nil {
				t.Fatal(err)
			}
			if w, h, err := imgsize.Of(b); err != nil || w != 512 || h != 320 {
				t.Fatalf("image %dx%d %v, want 512x320 (1280x800 in OpenAI's low-detail box)", w, h, err)
			}
		}
	}
	if found != 1 {
		t.Fatalf("%d images in the request", found)
	}

	for _, c := range []struct{ flag, value, want string }{
		{"--screenshot-format", "gif", `--screenshot-format: agent: invalid settings: ScreenshotFormat "gif" (want jpeg, webp or png)`},
		{"--screenshot-quality", "101", "--screenshot-quality: agent: invalid settings: ScreenshotQuality 101 (want 1..100)"},
		{"--screenshot-detail", "medium", `--screenshot-detail: agent: invalid settings: ScreenshotDetail "medium" (want low, high or auto)`},
	} {
		r := cli(t, nil, "run", "--model", "ollama:x", c.flag, c.value, "do it")
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s %s: exit %d, stderr %q", c.flag, c.value, r.code, r.stderr)
		}
	}
}
