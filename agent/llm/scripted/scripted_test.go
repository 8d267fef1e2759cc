package scripted_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/scripted"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// loginPage is a user message as the agent builds it, with the page in
// browser-use's serialized format.
const loginPage = `<agent_history>
<step>
Evaluation of Previous Step: Success
Memory: opened the login page
</step>
</agent_history>
<agent_state>
<user_request>
Log in as test@example.com and open the settings.
</user_request>
<step_info>Step 2 of 20</step_info>
</agent_state>
<browser_state>
Current tab: 0
Available tabs:
Tab 0: http://127.0.0.1:8080/login - Login
Page info: 1280x720px viewport, 1280x1650px total page size
Interactive elements:
[Start of page]
[1]<a href=/ />
	Home
[2]<a href=/about />
	About us
|scroll element[5]<div class=panel /> (0.0 pages above, 1.2 pages below)
	Sign in to your account
	[7]<label for=email />
		Email address
	[8]<input type=email name=email placeholder=you@example.com required=true />
	[9]<input type=password name=password aria-label=Your password />
	*[12]<button type=submit />
		Submit
	[13]<button aria-label=Close dialog />
	[14]<a href=/reset />
		Forgot your password?
	[15]<input type=checkbox name=remember value='' />
	Remember me
[End of page]
</browser_state>
`

func userMsgs(pages ...string) llm.Request {
	r := llm.Request{Messages: []llm.Message{llm.SystemMessage("You are a browser agent. [99]<button /> is not a page.")}}
	for i, p := range pages {
		if i > 0 {
			r.Messages = append(r.Messages, llm.AssistantMessage(`{"action":[]}`))
		}
		r.Messages = append(r.Messages, llm.UserMessage(llm.Text(p), llm.ImagePart("image/png", []byte("x"))))
	}
	return r
}

func TestFindLabels(t *testing.T) {
	elems := scripted.ParseElements(loginPage)
	if len(elems) != 10 {
		t.Fatalf("parsed %d elements: %+v", len(elems), elems)
	}
	for label, want := range map[string]int{
		"Submit":                  12,
		"submit":                  12,
		"Email address":           7,
		"email":                   8, // name attribute
		"you@example.com":         8, // placeholder
		"Your password":           9, // aria-label
		"Close dialog":            13,
		"forgot your password":    14, // substring of own text, not the panel's
		"Sign in to your account": 5,
		"About":                   2,
		"Home":                    1,
	} {
		e, err := scripted.Find(elems, label, "")
		if err != nil || e.Index != want {
			t.Errorf("Find(%q) = [%d] %v, want [%d]", label, e.Index, err, want)
		}
	}
	e, _ := scripted.Find(elems, "Submit", "")
	if !e.New || e.Tag != "button" || e.Attrs["type"] != "submit" {
		t.Errorf("element %+v", e)
	}
	in, _ := scripted.Find(elems, "email", "input")
	if in.Attrs["placeholder"] != "you@example.com" || in.Attrs["required"] != "true" {
		t.Errorf("attrs %+v", in.Attrs)
	}
	if cb, _ := scripted.Find(elems, "remember", ""); cb.Index != 15 || cb.Attrs["value"] != "" {
		t.Errorf("checkbox %+v", cb)
	}
	if _, err := scripted.Find(elems, "Email address", "button"); !errors.Is(err, scripted.ErrLabelNotFound) {
		t.Errorf("tag filter: %v", err)
	}
	_, err := scripted.Find(elems, "Register", "")
	if !errors.Is(err, scripted.ErrLabelNotFound) || !strings.Contains(err.Error(), `"Register"`) || !strings.Contains(err.Error(), `[12]<button>"Submit"`) {
		t.Errorf("not found error: %v", err)
	}
}

func decode(t *testing.T, resp *llm.Response) scripted.Output {
	t.Helper()
	var out scripted.Output
	if err := llm.DecodeJSON(resp, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.Content, `{"thinking":`) {
		t.Errorf("reply does not start with thinking: %s", resp.Content)
	}
	return out
}

func TestScriptResolvesLabelsFromLatestMessage(t *testing.T) {
	m := scripted.New([]scripted.Step{
		{Actions: []scripted.Action{
			{Name: "input", Label: "you@example.com", Params: map[string]any{"text": "test@example.com"}},
			{Name: "input", Label: "Your password", Params: map[string]any{"text": "secret"}},
		}, Memory: "filled the form"},
		{Action: "click", Label: "Submit"},
		{Action: "done", Params: map[string]any{"success": true, "text": "logged in"}},
	}, scripted.WithName("login-script"))
	ctx := context.Background()
	earlier := strings.Replace(loginPage, "*[12]<button type=submit />", "[40]<button type=submit />", 1)

	resp, err := m.Generate(ctx, userMsgs(earlier, loginPage))
	if err != nil {
		t.Fatal(err)
	}
	out := decode(t, resp)
	if len(out.Action) != 2 || out.Memory != "filled the form" {
		t.Fatalf("out %+v", out)
	}
	in := out.Action[0]["input"].(map[string]any)
	if in["index"] != float64(8) || in["text"] != "test@example.com" {
		t.Errorf("input %+v", in)
	}
	if pw := out.Action[1]["input"].(map[string]any); pw["index"] != float64(9) {
		t.Errorf("password %+v", pw)
	}
	if resp.Model != "login-script" || resp.Usage.TotalTokens == 0 || m.Name() != "login-script" {
		t.Errorf("resp %+v", resp)
	}

	resp, _ = m.Generate(ctx, userMsgs(earlier, loginPage))
	if c := decode(t, resp).Action[0]["click"].(map[string]any); c["index"] != float64(12) {
		t.Errorf("click resolved to %v, want 12 from the latest message", c["index"])
	}
	resp, _ = m.Generate(ctx, userMsgs(loginPage))
	if d := decode(t, resp).Action[0]["done"].(map[string]any); d["success"] != true || d["text"] != "logged in" {
		t.Errorf("done %+v", d)
	}
	if !m.Done() || len(m.Requests()) != 3 || len(m.Errors()) != 0 {
		t.Errorf("done=%v requests=%d errors=%v", m.Done(), len(m.Requests()), m.Errors())
	}

	// Past the end: a failing done reply, recorded.
	resp, err = m.Generate(ctx, userMsgs(loginPage))
	if err != nil {
		t.Fatal(err)
	}
	if d := decode(t, resp).Action[0]["done"].(map[string]any); d["success"] != false || !strings.Contains(d["text"].(string), "script exhausted") {
		t.Errorf("exhausted reply %+v", d)
	}
	if errs := m.Errors(); len(errs) != 1 || !errors.Is(errs[0], scripted.ErrScriptExhausted) {
		t.Errorf("errors %v", errs)
	}
}

func TestMissingLabelBecomesReply(t *testing.T) {
	m := scripted.New([]scripted.Step{{Action: "click", Label: "Create account"}})
	resp, err := m.Generate(context.Background(), userMsgs(loginPage))
	if err != nil {
		t.Fatal(err)
	}
	out := decode(t, resp)
	d := out.Action[0]["done"].(map[string]any)
	text := d["text"].(string)
	if d["success"] != false || !strings.Contains(text, `no element labelled "Create account"`) || !strings.Contains(text, "step 1 (click)") {
		t.Errorf("reply %+v", d)
	}
	if m.Done() {
		t.Error("a failed step must not advance")
	}

	strict := scripted.New([]scripted.Step{{Action: "click", Label: "Create account"}}, scripted.FailWithError())
	if _, err := strict.Generate(context.Background(), userMsgs(loginPage)); !errors.Is(err, scripted.ErrLabelNotFound) || !errors.Is(err, scripted.ErrScript) {
		t.Errorf("err = %v", err)
	}
}

func TestConditionalSteps(t *testing.T) {
	m := scripted.New([]scripted.Step{
		{WaitFor: "Welcome back", Action: "click", Label: "Settings", WaitSeconds: 2},
		{WaitForLabel: "Save", MaxWaits: 2, Action: "click", Label: "Save"},
	})
	ctx := context.Background()
	resp, _ := m.Generate(ctx, userMsgs(loginPage))
	w := decode(t, resp).Action[0]["wait"].(map[string]any)
	if w["seconds"] != float64(2) {
		t.Fatalf("want wait, got %s", resp.Content)
	}
	home := "<browser_state>\nWelcome back, Test!\n[30]<a href=/settings />\n\tSettings\n</browser_state>"
	resp, _ = m.Generate(ctx, userMsgs(home))
	if c := decode(t, resp).Action[0]["click"].(map[string]any); c["index"] != float64(30) {
		t.Fatalf("got %s", resp.Content)
	}
	// The Save button never appears: two waits, then a failing done.
	for range 2 {
		resp, _ = m.Generate(ctx, userMsgs(home))
		if _, ok := decode(t, resp).Action[0]["wait"]; !ok {
			t.Fatalf("want wait, got %s", resp.Content)
		}
	}
	resp, _ = m.Generate(ctx, userMsgs(home))
	d := decode(t, resp).Action[0]["done"].(map[string]any)
	if d["success"] != false || !strings.Contains(d["text"].(string), `no element labelled "Save" yet after 2 waits`) {
		t.Errorf("got %+v", d)
	}
	if errs := m.Errors(); len(errs) != 1 || !errors.Is(errs[0], scripted.ErrWaitExhausted) {
		t.Errorf("errors %v", errs)
	}
}

func TestLoadScriptFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "login.json")
	os.WriteFile(p, []byte(`{"name": "demo", "steps": [
		{"action": "click", "label": "Submit"},
		{"actions": [{"name": "navigate", "params": {"url": "http://127.0.0.1/x"}}], "next_goal": "go"}
	]}`), 0o600)
	m, err := scripted.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := m.Generate(context.Background(), userMsgs(loginPage))
	if c := decode(t, resp).Action[0]["click"].(map[string]any); c["index"] != float64(12) || m.Name() != "demo" {
		t.Errorf("got %s", resp.Content)
	}
	resp, _ = m.Generate(context.Background(), userMsgs(loginPage))
	if out := decode(t, resp); out.NextGoal != "go" || out.Action[0]["navigate"] == nil {
		t.Errorf("got %s", resp.Content)
	}

	if _, err := scripted.Parse([]byte(`[{"action":"click","lable":"Submit"}]`)); err == nil || !strings.Contains(err.Error(), "lable") {
		t.Errorf("typo not caught: %v", err)
	}
	if _, err := scripted.Parse([]byte(`[{"label":"Submit"}]`)); err == nil || !strings.Contains(err.Error(), "step 1 has no action") {
		t.Errorf("missing action: %v", err)
	}
	if _, err := scripted.Load(filepath.Join(dir, "nope.json")); err == nil {
		t.Error("missing file")
	}
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := scripted.New([]scripted.Step{{Action: "done"}})
	if _, err := m.Generate(ctx, userMsgs(loginPage)); !errors.Is(err, context.Canceled) || m.Done() {
		t.Errorf("err = %v", err)
	}
}

func FuzzParseElements(f *testing.F) {
	f.Add(loginPage, "Submit")
	f.Add("\t*[1]<a x=y />\n\t\ttext", "text")
	f.Add("[2]<", "")
	f.Add("|SHADOW(open)|[3]<input aria-label='' />", "x")
	f.Fuzz(func(t *testing.T, page, label string) {
		elems := scripted.ParseElements(page)
		e, err := scripted.Find(elems, label, "")
		if err == nil && (e.Line < 1 || e.Index < 0 || !strings.Contains(strings.ToLower(page), "]<"+e.Tag)) {
			t.Fatalf("found %+v which is not on the page", e)
		}
		if err != nil && err.Error() == "" {
			t.Fatal("empty error")
		}
	})
}

// The reply has the keys of the request's schema, in its order; Text steps
// answer free text and Error steps fail the call without counting as
// script failures.
func TestSchemaFieldsTextAndError(t *testing.T) {
	one := 1
	m := scripted.New([]scripted.Step{
		{Action: "go_back", PlanUpdate: []string{"a"}, CurrentPlanItem: &one},
		{Action: "go_back", PlanUpdate: []string{"a"}},
		{Text: "a summary"},
		{Error: "503 overloaded"},
		{Action: "go_back"},
	})
	ctx := context.Background()
	req := userMsgs(loginPage)
	req.Schema = &llm.Schema{JSON: []byte(`{"type":"object","properties":{"memory":{"type":"string"},"plan_update":{},"current_plan_item":{},"action":{"type":"array"}}}`)}
	resp, err := m.Generate(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"memory":"scripted step 1 of 5 done","plan_update":["a"],"current_plan_item":1,"action":[{"go_back":{}}]}`; resp.Content != want {
		t.Fatalf("reply %s\nwant %s", resp.Content, want)
	}
	req.Schema.JSON = []byte(`{"type":"object","properties":{"memory":{"type":"string"},"action":{"type":"array"}}}`)
	if resp, err = m.Generate(ctx, req); err != nil || resp.Content != `{"memory":"scripted step 2 of 5 done","action":[{"go_back":{}}]}` {
		t.Fatalf("flash reply %v %v", resp, err)
	}
	if resp, err = m.Generate(ctx, userMsgs("summarise")); err != nil || resp.Content != "a summary" || resp.Usage.CompletionTokens == 0 {
		t.Fatalf("text step %+v %v", resp, err)
	}
	if _, err = m.Generate(ctx, req); !errors.Is(err, scripted.ErrInjected) || !strings.Contains(err.Error(), "503 overloaded") {
		t.Fatalf("error step: %v", err)
	}
	if _, err = m.Generate(ctx, req); err != nil || !m.Done() || len(m.Errors()) != 0 {
		t.Fatalf("after the error step: %v done=%v errors=%v", err, m.Done(), m.Errors())
	}
	if _, err := scripted.Parse([]byte(`[{"text":"s"},{"error":"e"},{"action":"done"}]`)); err != nil {
		t.Fatalf("parse: %v", err)
	}
}
