package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/internal/testbrowser"
)

// tokens opens the page in Chromium, observes it once and prints the
// first step's prompt per part with o200k counts: the parts add up to the
// total, the page's elements, files and history are not fixed, the compact
// form's fixed part is about half the full form's, --show prints the prompt
// itself (the schema row once), and with vision the screenshot is encoded
// and bounded as the loop sends it, its image tokens counted.
func TestTokensOnFixturePage(t *testing.T) {
	env := testbrowser.Start(t)
	base := []string{"tokens", "--cdp-url", env.Browser.WebSocketURL(), "--new-tab", "--vision", "off", "--url", env.URL("/form.html")}
	counts := func(extra ...string) tokenReport {
		t.Helper()
		r := cli(t, nil, append(append(append([]string(nil), base...), extra...), "--json", "Fill in the form")...)
		if r.code != 0 {
			t.Fatalf("tokens exit %d: %s", r.code, r.stderr)
		}
		var rep tokenReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, r.stdout)
		}
		return rep
	}
	compact := counts()
	sum, fixed := compact.Schema.Tokens, compact.Schema.Tokens
	seen := map[string]tokenPart{}
	for _, p := range compact.Parts {
		sum += p.Tokens
		if p.Fixed {
			fixed += p.Tokens
		}
		seen[p.Name] = p
	}
	if sum != compact.TotalTokens || fixed != compact.FixedTokens || compact.Tokenizer != "o200k_base" || !strings.HasPrefix(compact.CacheKey, "ba-") {
		t.Fatalf("totals do not add up: %+v", compact)
	}
	if el := seen["elements"]; el.Tokens == 0 || el.Fixed || !seen["system"].Fixed || seen["actions"].Tokens == 0 || seen["user_request"].Fixed {
		t.Fatalf("parts: %+v", compact.Parts)
	}
	full := counts("--action-schema", "full")
	if _, ok := func() (tokenPart, bool) {
		for _, p := range full.Parts {
			if p.Name == "actions" {
				return p, true
			}
		}
		return tokenPart{}, false
	}(); ok || full.Schema.Tokens < 5*compact.Schema.Tokens || full.FixedTokens <= compact.FixedTokens {
		t.Fatalf("full form: schema %d tokens (compact %d), fixed %d (compact %d)", full.Schema.Tokens, compact.Schema.Tokens, full.FixedTokens, compact.FixedTokens)
	}
	t.Logf("form.html: compact fixed %d of %d tokens; full fixed %d of %d", compact.FixedTokens, compact.TotalTokens, full.FixedTokens, full.TotalTokens)

	r := cli(t, nil, append(append([]string(nil), base...), "--show", "Fill in the form")...)
	if r.code != 0 {
		t.Fatalf("tokens --show exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"----- system (system) -----", "# Actions", "<user_request>\nFill in the form\n</user_request>", "type=email", "fixed (every step)", "tokenizer o200k_base"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("tokens --show lacks %q:\n%s", want, r.stdout)
		}
	}
	if n := strings.Count(r.stdout, "\nschema "); n != 1 {
		t.Errorf("the schema row is printed %d times:\n%s", n, r.stdout)
	}
	for _, p := range compact.Parts {
		if (p.Name == "agent_files" || p.Name == "page_specific_actions" || p.Name == "history_step") && p.Fixed {
			t.Errorf("%s counted as fixed", p.Name)
		}
	}

	// With vision the screenshot is the one the loop sends the model:
	// encoded and bounded as for it (OpenAI: a 1024-px box, at most 4
	// tiles = 765 tokens, where the full 1280-px page costs 6 = 1,105),
	// with its image tokens counted; --screenshot-format is obeyed.
	shot := func(extra ...string) tokenPart {
		t.Helper()
		args := []string{"tokens", "--cdp-url", env.Browser.WebSocketURL(), "--new-tab", "--vision", "on", "--model", "openai:gpt-4.1", "--url", env.URL("/form.html"), "--json"}
		r := cli(t, nil, append(append(args, extra...), "Fill in the form")...)
		if r.code != 0 {
			t.Fatalf("tokens exit %d: %s", r.code, r.stderr)
		}
		var rep tokenReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, r.stdout)
		}
		for _, p := range rep.Parts {
			if p.Name == "screenshot" {
				return p
			}
		}
		t.Fatalf("no screenshot part: %+v", rep.Parts)
		return tokenPart{}
	}
	jpeg, png := shot(), shot("--screenshot-format", "png")
	if jpeg.ImageTokens <= 0 || jpeg.ImageTokens > 765 || jpeg.Tokens <= jpeg.ImageTokens || jpeg.Fixed {
		t.Fatalf("screenshot part: %+v", jpeg)
	}
	if jpeg.ImageType != "image/jpeg" || png.ImageType != "image/png" {
		t.Fatalf("the default screenshot is %s, with --screenshot-format png %s", jpeg.ImageType, png.ImageType)
	}
	t.Logf("form.html screenshot for openai: jpeg %d bytes, png %d bytes, %d image tokens", jpeg.ImageBytes, png.ImageBytes, jpeg.ImageTokens)

	if bad := cli(t, nil, "tokens", "--action-schema", "both", "x"); bad.code != 2 || !strings.Contains(bad.stderr, "--action-schema must be compact or full") {
		t.Fatalf("a bad --action-schema: exit %d, %s", bad.code, bad.stderr)
	}
}
