package agent

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"text/template"

	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/events"
)

//go:embed prompts/*.md
var promptFS embed.FS

// prompt parses an embedded prompt template once.
var prompt = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("prompts").Option("missingkey=error").ParseFS(promptFS, "prompts/*.md"))
})

// execPrompt renders the embedded prompt file name with data.
func execPrompt(name string, data any) string {
	var b strings.Builder
	if err := prompt().ExecuteTemplate(&b, name, data); err != nil {
		panic(err) // the templates and their data are fixed at build time
	}
	return b.String()
}

// SystemPrompt returns the default system prompt for maxActions actions per
// step: ReplyFull with planning (prompts/system.md), without the action
// list (see Prompt for the system prompt a run sends).
func SystemPrompt(maxActions int) string {
	return SystemPromptFor(maxActions, ReplyFull, true)
}

// SystemPromptFor returns the system prompt of a reply mode: the sections
// of prompts/system.md that mode asks for (the reply format lists exactly
// the mode's fields; the plan advice only when planning is on, never in
// ReplyFlash). In ActionSchemaCompact the agent appends the action list
// (RenderPrompt shows the whole text).
func SystemPromptFor(maxActions int, mode ReplyMode, planning bool) string {
	return execPrompt("system.md", struct {
		MaxActions                int
		Thinking, Goals, Planning bool
	}{maxActions, mode == ReplyFull || mode == "", mode != ReplyFlash, planning && mode != ReplyFlash})
}

// actionsHeading opens the action list of the compact system prompt.
const actionsHeading = "\n\n# Actions\n\n\"?\": optional; untyped: string.\n"

// systemPrompt returns the system prompt's text (OverrideSystemPrompt, or
// the mode's prompt plus ExtendSystemPrompt) and, in ActionSchemaCompact,
// the action list that follows it: every action offered on any page
// (domain-restricted actions are listed in the user message where they
// apply), so that the whole system prompt is the same on every step.
func (a *Agent) systemPrompt() (text, actions string) {
	text = a.set.OverrideSystemPrompt
	if text == "" {
		text = SystemPromptFor(a.set.MaxActionsPerStep, a.set.ReplyMode, a.set.planning())
		if a.set.ExtendSystemPrompt != "" {
			text += "\n\n" + a.set.ExtendSystemPrompt
		}
	}
	if a.set.ActionSchema == ActionSchemaCompact {
		var b strings.Builder
		for _, s := range a.offered("", false) {
			if stateSpecific(s.Name) {
				continue // listed where it applies (page_specific_actions)
			}
			if s.Name == "done" && a.outSch != nil {
				// The data's schema is stated once, in <expected_output>.
				b.WriteString("\ndone{success: bool, data: see <expected_output>}: " + s.Description)
				continue
			}
			b.WriteString("\n" + actionLine(s))
		}
		actions = strings.TrimSuffix(actionsHeading, "\n") + b.String()
	}
	return text, actions
}

// Prompt is one step's request as the model gets it, with its parts named:
// what RenderPrompt returns and the loop sends.
type Prompt struct {
	// Messages are the system message (one text part, a cache breakpoint)
	// and the user message, whose text parts are, in order: the request
	// and the expected output up to "<agent_history>\n"; one part per
	// history step (a summary or an omission notice travels with the step
	// before it); the step's state, from "</agent_history>\n" to
	// </step_info>; one part per nudge; then the screenshot's caption and
	// image when vision applies. The cache breakpoint of the user message
	// is on the last history step's part (on the first part while the
	// history is empty), so that the next step's request, whose history
	// only grows, repeats everything up to it as a block boundary.
	Messages []llm.Message
	// Schema is the reply schema. In ActionSchemaCompact it is Loose and
	// the same on every step, except when only done is offered (the last
	// step, or after MaxFailures failures): then it is the full form with
	// done alone, so that a provider's constrained decoding can only
	// answer with done.
	Schema *llm.Schema
	// CacheKey is the request's llm.Request.CacheKey: "ba-" and 16 hex
	// digits of the SHA-256 of the system prompt and the schema, the same
	// on every step whose prefix is the same.
	CacheKey string
	// Parts are the texts of Messages, named and in order: the texts of
	// the parts of one message concatenated are that message's text parts.
	Parts []PromptPart
}

// PromptPart is a named piece of a Prompt.
type PromptPart struct {
	// Name is "system" or "actions" (the system message), or a section of
	// the user message: "user_request", "expected_output",
	// "agent_history" (its opening tag), "history_step" (one per step, or
	// "(no steps yet)"), "agent_history_end" (the closing tag),
	// "agent_state" (its tags), "agent_files" (todo.md, files, plan,
	// secrets' names, file paths inside agent_state), "browser_state",
	// "elements" (the page's element text inside browser_state),
	// "browser_state_end", "read_state", "page_specific_actions",
	// "step_info", "nudge", "screenshot".
	Name string
	// Role is the message the part is in.
	Role llm.Role
	// Text is the part's text, as sent (secrets scrubbed).
	Text string
	// Image is the screenshot's bytes (the "screenshot" part only).
	Image []byte
	// Fixed marks text every step pays whatever the task, the page's
	// elements, the history, the agent's files and plan and the actions
	// of the page's domain: the system prompt, the tags, the tab and page
	// facts, the step info. The rest (task, expected output's schema
	// aside, history steps, element text, agent_files, read_state,
	// page_specific_actions, nudges, screenshot) is not fixed.
	Fixed bool
}

// Request is the llm.Request of the prompt.
func (p *Prompt) Request() llm.Request {
	return llm.Request{Messages: p.Messages, Schema: p.Schema, CacheKey: p.CacheKey}
}

// cacheKey is Prompt.CacheKey for a system prompt and a schema.
func cacheKey(system string, schema *llm.Schema) string {
	h := sha256.New()
	h.Write([]byte(system))
	h.Write([]byte{0})
	if schema != nil {
		h.Write(schema.JSON)
	}
	return "ba-" + hex.EncodeToString(h.Sum(nil))[:16]
}

// stepPrompt builds a step's prompt: the system prompt and one user message
// rebuilt from scratch (not a growing chat), ordered from the most stable
// text to the least (request, history, state, page, step info), then the
// nudges and the screenshot. Every text goes through the secret scrubber.
// When done is the only action offered (the last step, or after
// MaxFailures failures) the reply schema is the full form with done alone,
// whatever Settings.ActionSchema, so that no other action can be chosen;
// the system prompt does not change.
func (a *Agent) stepPrompt(st *events.BrowserState, n, i int, offered []ActionSpec, nudges []string) *Prompt {
	form := a.set.ActionSchema
	if len(offered) == 1 && offered[0].Name == "done" {
		form = ActionSchemaFull
	}
	p := &Prompt{Schema: replySchema(offered, a.set.MaxActionsPerStep, a.set.ReplyMode, a.set.planning(), form)}
	sysText, actions := a.systemPrompt()
	add := func(role llm.Role, name, text string, fixed bool) {
		if text != "" {
			p.Parts = append(p.Parts, PromptPart{Name: name, Role: role, Text: a.secrets.scrub(text), Fixed: fixed})
		}
	}
	add(llm.RoleSystem, "system", sysText, true)
	add(llm.RoleSystem, "actions", actions, true)

	a.mu.Lock()
	tasks := append([]string(nil), a.tasks...)
	items := append([]HistoryItem(nil), a.history.Items...)
	a.mu.Unlock()

	var b strings.Builder
	if len(tasks) == 1 {
		fmt.Fprintf(&b, "<user_request>\n%s\n</user_request>\n", tasks[0])
	} else {
		fmt.Fprintf(&b, "<user_request>\n<initial_user_request>\n%s\n</initial_user_request>\n", tasks[0])
		for _, t := range tasks[1:] {
			fmt.Fprintf(&b, "<follow_up_user_request>\n%s\n</follow_up_user_request>\n", t)
		}
		b.WriteString("</user_request>\n")
	}
	add(llm.RoleUser, "user_request", b.String(), false)
	if a.outSch != nil {
		add(llm.RoleUser, "expected_output", fmt.Sprintf("<expected_output>\nFinish with done whose data follows this JSON schema:\n%s\n</expected_output>\n", a.outSch), false)
	}
	add(llm.RoleUser, "agent_history", "<agent_history>\n", true)
	head := len(p.Parts) // the user parts before this index form the first block
	for _, h := range a.historySteps(items) {
		add(llm.RoleUser, "history_step", h, false)
	}
	state := len(p.Parts) // the user parts from here to tail form the state block
	add(llm.RoleUser, "agent_history_end", "</agent_history>\n", true)

	b.Reset()
	// An empty todo.md is left out: it told the model nothing, every step.
	if todo, err := a.fs.Read("todo.md"); err == nil && strings.TrimSpace(todo) != "" {
		fmt.Fprintf(&b, "<todo_contents>\n%s\n</todo_contents>\n", todo)
	}
	if fsd := a.fs.describe(); fsd != "" {
		fmt.Fprintf(&b, "<file_system>\n%s</file_system>\n", fsd)
	}
	if a.set.planning() && len(a.plan) > 0 {
		fmt.Fprintf(&b, "<plan>\n%s</plan>\n", planText(a.plan))
	}
	if names := a.secrets.names(st.URL); len(names) > 0 {
		fmt.Fprintf(&b, "<sensitive_data>\nSecrets you can type on this page with input, writing the placeholder exactly: %s\n</sensitive_data>\n", placeholders(names))
	}
	if len(a.set.AvailableFilePaths) > 0 {
		fmt.Fprintf(&b, "<available_file_paths>\n%s\n</available_file_paths>\n", strings.Join(a.set.AvailableFilePaths, "\n"))
	}
	add(llm.RoleUser, "agent_state", "<agent_state>\n", true)
	add(llm.RoleUser, "agent_files", b.String(), false)
	add(llm.RoleUser, "agent_state", "</agent_state>\n", true)

	b.Reset()
	b.WriteString("<browser_state>\n")
	at, elems := a.browserStateText(&b, st)
	at += len("<browser_state>\n")
	b.WriteString("</browser_state>\n")
	bs := b.String()
	if elems != "" {
		add(llm.RoleUser, "browser_state", bs[:at], true)
		add(llm.RoleUser, "elements", elems, false)
		add(llm.RoleUser, "browser_state_end", bs[at+len(elems):], true)
	} else {
		add(llm.RoleUser, "browser_state", bs, true)
	}

	if len(a.readState) > 0 {
		rs := strings.Join(a.readState, "\n\n")
		if len(rs) > DefaultMaxReadStateChars {
			rs = strings.ToValidUTF8(rs[:DefaultMaxReadStateChars], "") + "\n[... truncated]"
		}
		add(llm.RoleUser, "read_state", fmt.Sprintf("<read_state>\n%s\n</read_state>\n", rs), false)
	}

	var pageSpecific []string
	for _, s := range offered {
		if len(s.Domains) > 0 || stateSpecific(s.Name) {
			pageSpecific = append(pageSpecific, actionLine(s))
		}
	}
	if len(pageSpecific) > 0 && a.set.ActionSchema == ActionSchemaCompact {
		add(llm.RoleUser, "page_specific_actions", fmt.Sprintf("<page_specific_actions>\n%s\n</page_specific_actions>\n", strings.Join(pageSpecific, "\n")), false)
	}
	add(llm.RoleUser, "step_info", fmt.Sprintf("<step_info>\nStep %d of %d (step number %d of the run). Today: %s\n</step_info>", i+1, a.set.MaxSteps, n, a.set.Now().Format("2006-01-02")), true)
	tail := len(p.Parts)
	for _, m := range nudges {
		add(llm.RoleUser, "nudge", m, false)
	}
	if caption, ok := a.screenshotCaption(st); ok {
		p.Parts = append(p.Parts, PromptPart{Name: "screenshot", Role: llm.RoleUser, Text: caption, Image: st.Screenshot})
	}

	// The messages are the parts joined into blocks: the system message;
	// the user message's first block (request .. "<agent_history>\n"),
	// one block per history step, the state block, then one per nudge and
	// the screenshot. The breakpoint is on the last block that the next
	// step repeats: the last history step (the first block while there is
	// none yet).
	var sys, first, stateText strings.Builder
	var user []llm.Part
	for j, pt := range p.Parts {
		switch {
		case pt.Role == llm.RoleSystem:
			sys.WriteString(pt.Text)
		case j < head:
			first.WriteString(pt.Text)
		case j < state:
			user = append(user, llm.Text(pt.Text))
		case j < tail:
			stateText.WriteString(pt.Text)
		case pt.Name == "screenshot":
			user = append(user, llm.Text(pt.Text), a.screenshotImage(pt.Image))
		default:
			user = append(user, llm.Text(pt.Text))
		}
	}
	system := llm.Part{Text: sys.String(), CacheBreakpoint: true}
	nsteps := state - head
	user = slices.Insert(user, nsteps, llm.Text(stateText.String()))
	user = slices.Insert(user, 0, llm.Text(first.String()))
	if len(items) > 0 && nsteps > 0 {
		user[nsteps].CacheBreakpoint = true
	} else {
		user[0].CacheBreakpoint = true
	}
	p.Messages = []llm.Message{{Role: llm.RoleSystem, Parts: []llm.Part{system}}, llm.UserMessage(user...)}
	p.CacheKey = cacheKey(system.Text, p.Schema)
	return p
}

func placeholders(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "<secret>" + n + "</secret>"
	}
	return strings.Join(out, ", ")
}

// historyText is <agent_history>'s body: historySteps joined.
func (a *Agent) historyText(items []HistoryItem) string {
	return strings.Join(a.historySteps(items), "")
}

// historySteps renders the steps for <agent_history>, one text per step: after a compaction the first
// step, the summary and the steps it did not fold; then cut to
// MaxHistoryItems when set. A summary or an omission notice is part of the
// text of the step before it. Without steps it is "(no steps yet)\n".
func (a *Agent) historySteps(items []HistoryItem) []string {
	if len(items) == 0 {
		return []string{"(no steps yet)\n"}
	}
	var out []string
	show := items
	summary := ""
	if a.compact.summary != "" && a.compact.upTo <= len(items) {
		summary = compactedText(a.compact)
		show = append([]HistoryItem{items[0]}, items[a.compact.upTo:]...)
	}
	if m := a.set.MaxHistoryItems; m > 0 && len(show) > m {
		out = append(out, stepText(show[0])+summary+fmt.Sprintf("[... %d previous steps omitted ...]\n", len(show)-m))
		summary = ""
		show = show[len(show)-(m-1):]
	}
	for i, it := range show {
		t := stepText(it)
		if i == 0 {
			t += summary
		}
		out = append(out, t)
	}
	return out
}

func stepText(it HistoryItem) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<step_%d>\n", it.Step)
	if o := it.Output; o != nil {
		if o.EvaluationPreviousGoal != "" {
			fmt.Fprintf(&b, "Evaluation of previous step: %s\n", o.EvaluationPreviousGoal)
		}
		if o.Memory != "" {
			fmt.Fprintf(&b, "Memory: %s\n", o.Memory)
		}
		if o.NextGoal != "" {
			fmt.Fprintf(&b, "Next goal: %s\n", o.NextGoal)
		}
	}
	total := len(it.Actions)
	if it.Output != nil {
		total = len(it.Output.Action)
	}
	for j, r := range it.Actions {
		params := displayJSON(r.Params)
		if params == "" || params == "{}" {
			params = ""
		} else {
			params = " " + shorten(params, 300)
		}
		fmt.Fprintf(&b, "Action %d/%d %s%s: ", j+1, max(total, len(it.Actions)), r.Name, params)
		if r.Error != "" {
			fmt.Fprintf(&b, "ERROR: %s%s\n", errorText(r.Error), failedEffect(r.Result.Outcome))
		} else {
			fmt.Fprintf(&b, "%s\n", shorten(r.Result.Text, 1000))
		}
	}
	for _, note := range it.Notes {
		fmt.Fprintf(&b, "%s\n", note)
	}
	if it.Error != "" {
		fmt.Fprintf(&b, "ERROR: %s\n", errorText(it.Error))
	}
	fmt.Fprintf(&b, "</step_%d>\n", it.Step)
	return b.String()
}

// failedEffect says what a failed action still did to the page, from its
// evidence: the model must not assume a failure changed nothing.
func failedEffect(o *events.ActionOutcome) string {
	switch {
	case o == nil || o.After.URL == "":
		return ""
	case o.After.URL != o.Before.URL:
		return " (the page is now " + o.After.URL + ")"
	case o.After.TabCount > o.Before.TabCount:
		return " (a new tab opened)"
	case o.After.Fingerprint != o.Before.Fingerprint:
		return " (the page changed nevertheless)"
	}
	return ""
}

// errorText keeps long errors readable: head and tail.
func errorText(s string) string {
	return shorten(s, DefaultHistoryErrorMaxLen)
}

// browserStateText renders <browser_state>'s body into b and returns the
// page's element text as written into it ("" when there is none) and its
// offset in what it wrote.
func (a *Agent) browserStateText(b *strings.Builder, st *events.BrowserState) (at int, elems string) {
	return writeBrowserState(b, st, a.set.MaxElementsChars)
}

// loadingHint is shown when the page seems not to have finished loading.
const loadingHint = "The page may still be loading; consider waiting."

// BrowserStateText is the body of the <browser_state> section the model
// reads for an observation, with the element list capped at maxChars
// (<= 0: DefaultMaxElementsChars). `browseragent state` prints it so that
// "why does this element have no index" can be answered from the same text.
func BrowserStateText(st *events.BrowserState, maxChars int) string {
	if maxChars <= 0 {
		maxChars = DefaultMaxElementsChars
	}
	var b strings.Builder
	_, _ = writeBrowserState(&b, st, maxChars)
	return b.String()
}

// writeBrowserState writes <browser_state>'s body into b and returns the
// element text it contains ("" when none) and the offset of that text from
// where b ended when it was called.
func writeBrowserState(b *strings.Builder, st *events.BrowserState, maxChars int) (at int, elems string) {
	start := b.Len()
	cur := TabRef(st.FocusedTarget)
	fmt.Fprintf(b, "Current tab: %s\nCurrent URL: %s\nTitle: %s\n", cur, st.URL, st.Title)
	if len(st.Tabs) > 1 { // one tab is the current one, already named
		b.WriteString("Available tabs:\n")
		for _, t := range st.Tabs {
			fmt.Fprintf(b, "Tab %s: %s - %s\n", TabRef(t.TargetID), t.URL, shorten(t.Title, 60))
		}
	}
	p := st.Page
	if p.ViewportHeight > 0 {
		above := float64(p.PixelsAbove) / float64(p.ViewportHeight)
		below := float64(p.PixelsBelow) / float64(p.ViewportHeight)
		side := ""
		if p.ViewportWidth > 0 && (p.PixelsLeft > 0 || p.PixelsRight > 0) {
			// Only a page that scrolls sideways says so: elements up to
			// 1000 px past either edge are indexed too.
			side = fmt.Sprintf(", %.1f pages left, %.1f pages right", float64(p.PixelsLeft)/float64(p.ViewportWidth), float64(p.PixelsRight)/float64(p.ViewportWidth))
		}
		fmt.Fprintf(b, "<page_info>%.1f pages above, %.1f pages below%s</page_info>\n", above, below, side)
	}
	for _, d := range st.ClosedDialogs {
		verb := "dismissed"
		if d.Accepted {
			verb = "accepted"
		}
		fmt.Fprintf(b, "A JavaScript %s dialog was %s for you: %q\n", d.Type, verb, shorten(d.Message, 300))
	}
	if len(st.Blocked) > 0 {
		b.WriteString(blockedText(st.Blocked) + "\n")
	}
	if st.IsPDFViewer {
		b.WriteString(pdfNote(st.PDFPages) + "\n")
	}
	if n := st.Stats; n.Nodes > 0 {
		fmt.Fprintf(b, "<page_stats>%d links, %d inputs, %d iframes, %d scroll containers, %d interactive elements, %d nodes</page_stats>\n",
			n.Links, n.Inputs, n.Iframes, n.ScrollContainers, n.Interactive, n.Nodes)
	}
	hints := st.Hints
	if len(st.PendingRequests) > 0 && len(st.Elements) < 10 && !slices.Contains(hints, loadingHint) {
		hints = append(hints, loadingHint)
	}
	for _, h := range hints {
		b.WriteString(h + "\n")
	}
	if st.Error != "" {
		fmt.Fprintf(b, "<browser_state_error>\n%s\nNo element index is valid this step. Wait, scroll, or navigate, then try again.\n</browser_state_error>\n", st.Error)
		return 0, ""
	}
	text := st.DOMText
	truncated := false
	if len(text) > maxChars {
		text = strings.ToValidUTF8(text[:maxChars], "")
		truncated = true
	}
	if truncated {
		fmt.Fprintf(b, "Interactive elements (truncated to %d characters; scroll or extract for the rest):\n", maxChars)
	} else {
		b.WriteString("Interactive elements:\n")
	}
	if strings.TrimSpace(text) == "" {
		b.WriteString("[Start of page]\n(empty page: nothing to interact with; the page may still be loading)\n[End of page]\n")
		return 0, ""
	}
	if p.PixelsAbove > 0 {
		fmt.Fprintf(b, "... %d pixels above - scroll up to see more ...\n", p.PixelsAbove)
	} else {
		b.WriteString("[Start of page]\n")
	}
	at = b.Len() - start
	b.WriteString(text)
	if !strings.HasSuffix(text, "\n") {
		b.WriteString("\n")
	}
	if p.PixelsBelow > 0 {
		fmt.Fprintf(b, "... %d pixels below - scroll down to see more ...\n", p.PixelsBelow)
	} else {
		b.WriteString("[End of page]\n")
	}
	return at, text
}

// maxBlockedHostsShown bounds the hosts of the blocked line: the model needs
// the main culprits, not a tracker's fan-out (the trace has every request).
const maxBlockedHostsShown = 8

// blockedText is the one line telling the model which requests the URL
// policy refused since the last observation, most-refused host first (the
// order of st.Blocked), e.g.
//
//	Blocked since the last step (refused by the URL policy; do not retry them): 3 requests to tracker.example (script, fetch); 1 request to evil.test (image)
//
// The explanation is said once: a page that fails because its scripts were
// refused is the policy working, and retrying cannot succeed.
func blockedText(bl []events.BlockedRequests) string {
	var b strings.Builder
	b.WriteString("Blocked since the last step (refused by the URL policy; do not retry them): ")
	for i, r := range bl {
		if i == maxBlockedHostsShown {
			n := 0
			for _, r := range bl[i:] {
				n += r.Count
			}
			fmt.Fprintf(&b, "; and %d more to %d other hosts", n, len(bl)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		noun := "requests"
		if r.Count == 1 {
			noun = "request"
		}
		fmt.Fprintf(&b, "%d %s to %s", r.Count, noun, r.Host)
		if len(r.Types) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(r.Types, ", "))
		}
	}
	return b.String()
}

// displayJSON re-encodes compact JSON without HTML escaping, so that
// placeholders read <secret>name</secret> rather than \u003csecret\u003e.
func displayJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return string(raw)
	}
	return strings.TrimSpace(b.String())
}
