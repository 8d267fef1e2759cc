package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"github.com/browseragent/browseragent/agent/match"
	"github.com/browseragent/browseragent/events"
)

// recStep is a recorded step as the replay runs it.
type recStep struct {
	step int // the recorded step number
	url  string
	// at is the page the recorded step observed (rebased), kept for a
	// step that begins with a navigation too: reaching it after a heal
	// says the heal did the step before it.
	at string
	// free: the step begins with a navigation, so the page it starts from
	// does not matter (no URL precondition).
	free       bool
	goal, eval string
	actions    []recAction
	// tabs are the tabs the recorded step observed (their URLs rebased),
	// to find a switched-to or closed tab again.
	tabs []events.TabInfo
}

// recAction is a recorded action as the replay runs it.
type recAction struct {
	pos  int // position in the recorded step
	rec  ActionRecord
	call ActionCall // params with variables applied and URLs rebased
	skip string     // why it is not replayed ("" when it is)
	v    string     // the variable it uses
}

// pageFree are actions after which the page a step started on does not
// matter.
var pageFree = map[string]bool{"navigate": true, "search": true, "go_back": true, "switch_tab": true}

// varParam names the parameter holding an action's variable value.
var varParam = map[string]string{"input": "text", "select_dropdown": "text", "upload_file": "path"}

// replayMaxWaitSeconds caps a recorded wait on replay: what the wait
// awaited (a page loading, a result appearing) the next step's settle
// polling awaits anyway, and no longer than needed.
const replayMaxWaitSeconds = 1

// compile turns h into the steps to replay, with opt's variables and
// rebase applied.
func compile(h *History, opt ReplayOptions) ([]recStep, []Variable, error) {
	if h == nil {
		return nil, nil, ErrReplayEmpty
	}
	rb, err := parseRebase(opt.Rebase)
	if err != nil {
		return nil, nil, err
	}
	vars := replayVariables(h)
	byPos := map[[2]int]Variable{}
	known := map[string]Variable{}
	for _, v := range vars {
		byPos[[2]int{v.Step, v.Action}] = v
		known[v.Name] = v
	}
	for name := range opt.Vars {
		v, ok := known[name]
		if !ok {
			names := make([]string, 0, len(known))
			for n := range known {
				names = append(names, n)
			}
			sort.Strings(names)
			if len(names) == 0 {
				return nil, nil, fmt.Errorf("%w: unknown variable %q: the recording has no variables", ErrReplayVars, name)
			}
			return nil, nil, fmt.Errorf("%w: unknown variable %q (known: %s)", ErrReplayVars, name, strings.Join(names, ", "))
		}
		if v.Secret {
			return nil, nil, fmt.Errorf("%w: %q is a secret: give it through Settings.SensitiveData, not a variable", ErrReplayVars, name)
		}
	}
	var steps []recStep
	for i := range h.Items {
		it := &h.Items[i]
		if len(it.Actions) == 0 {
			continue
		}
		s := recStep{step: it.Step, url: rebaseURL(it.State.URL, rb)}
		s.at = s.url
		for _, t := range it.State.Tabs {
			t.URL = rebaseURL(t.URL, rb)
			s.tabs = append(s.tabs, t)
		}
		if it.Output != nil {
			s.goal, s.eval = it.Output.NextGoal, it.Output.EvaluationPreviousGoal
		}
		runs := 0
		for j, r := range it.Actions {
			ra := recAction{pos: j, rec: r, call: ActionCall{Name: r.Name, Params: r.Params}}
			switch {
			case r.Denied:
				ra.skip = "denied in the recording"
			case r.Error != "":
				ra.skip = "failed in the recording"
			case r.Name == "done" && !r.Result.Done:
				ra.skip = "held back in the recording"
			}
			if ra.skip == "" {
				if runs == 0 && pageFree[r.Name] {
					s.free = true
				}
				runs++
				if v, ok := byPos[[2]int{it.Step, j}]; ok {
					ra.v = v.Name
					if val, set := opt.Vars[v.Name]; set {
						ra.call.Params = setParam(r.Params, varParam[r.Name], val)
					}
				}
				switch r.Name {
				case "navigate":
					var p NavigateParams
					if json.Unmarshal(r.Params, &p) == nil {
						ra.call.Params = setParam(ra.call.Params, "url", rebaseURL(p.URL, rb))
					}
				case "wait":
					var p WaitParams
					if json.Unmarshal(r.Params, &p) == nil && (p.Seconds <= 0 || p.Seconds > replayMaxWaitSeconds) {
						ra.call.Params = setParam(ra.call.Params, "seconds", replayMaxWaitSeconds)
					}
				}
				ra.rec.Element = rebaseElement(r.Element, rb)
			}
			s.actions = append(s.actions, ra)
		}
		if runs == 0 {
			// Kept for the report (its actions say why they are skipped),
			// with nothing to run.
			s.free = true
		}
		if s.free {
			s.url = ""
		}
		steps = append(steps, s)
	}
	if len(steps) == 0 {
		return nil, nil, ErrReplayEmpty
	}
	return steps, vars, nil
}

// setParam returns params with key set to value (other keys kept).
func setParam(params json.RawMessage, key string, value any) json.RawMessage {
	m := map[string]any{}
	_ = json.Unmarshal(orEmpty(params), &m)
	m[key] = value
	b, err := json.Marshal(m)
	if err != nil {
		return params
	}
	return b
}

// parseRebase checks ReplayOptions.Rebase: every key and value is an
// origin (scheme and host, no path, query or fragment). The result maps
// the key's origin, lower case, to the target.
func parseRebase(rebase map[string]string) (map[string]*url.URL, error) {
	if len(rebase) == 0 {
		return nil, nil
	}
	out := make(map[string]*url.URL, len(rebase))
	for from, to := range rebase {
		f, err := parseOrigin(from)
		if err != nil {
			return nil, fmt.Errorf("%w: rebase %q: %w", ErrReplay, from, err)
		}
		t, err := parseOrigin(to)
		if err != nil {
			return nil, fmt.Errorf("%w: rebase %q to %q: %w", ErrReplay, from, to, err)
		}
		out[originKey(f)] = t
	}
	return out, nil
}

func parseOrigin(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if u.Scheme == "" || u.Host == "" || u.Opaque != "" {
		return nil, errors.New("not an origin: give a scheme and a host, as in http://127.0.0.1:8080")
	}
	if strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("an origin has no path, query or fragment")
	}
	return u, nil
}

// originKey is u's scheme and host, lower case (how origins compare).
func originKey(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
}

// rebaseURL replaces raw's origin by its Rebase target (a userinfo the
// target does not set is kept).
func rebaseURL(raw string, rb map[string]*url.URL) string {
	if len(rb) == 0 || raw == "" {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	to, ok := rb[originKey(u)]
	if !ok {
		return raw
	}
	u.Scheme, u.Host = to.Scheme, to.Host
	if to.User != nil {
		u.User = to.User
	}
	return u.String()
}

// rebaseElement returns e with its href rebased; a changed href also
// drops the hashes, which digest it.
func rebaseElement(e *match.Element, rb map[string]*url.URL) *match.Element {
	if e == nil || len(rb) == 0 {
		return e
	}
	h := e.Attrs["href"]
	nh := rebaseURL(h, rb)
	if nh == h {
		return e
	}
	c := *e
	c.Attrs = maps.Clone(e.Attrs)
	c.Attrs["href"] = nh
	c.Hash, c.StableHash = "", ""
	return &c
}

var (
	idSegment = regexp.MustCompile(`^(\d+|[0-9a-fA-F]{12,}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$`)
)

// sameRoute reports whether got is where want (a recorded URL, rebased)
// was: same scheme and host, same path, a path segment that looks like an
// id (digits, UUID, long hex) matching any such segment; query and fragment
// are ignored (they carry session state and search terms more often than
// the route).
func sameRoute(want, got string) bool {
	if want == "" {
		return true
	}
	w, err1 := url.Parse(want)
	g, err2 := url.Parse(got)
	if err1 != nil || err2 != nil {
		return want == got
	}
	if w.Scheme != g.Scheme || w.Host != g.Host {
		return false
	}
	ws := strings.Split(strings.Trim(w.Path, "/"), "/")
	gs := strings.Split(strings.Trim(g.Path, "/"), "/")
	if len(ws) != len(gs) {
		return false
	}
	for i := range ws {
		if ws[i] == gs[i] || (idSegment.MatchString(ws[i]) && idSegment.MatchString(gs[i])) {
			continue
		}
		return false
	}
	return true
}

func replayVariables(h *History) []Variable {
	if h == nil {
		return nil
	}
	// Secrets keep their placeholder's name (listed once); plain values
	// are named from their element, made unique against every name.
	taken := map[string]bool{}
	for _, it := range h.Items {
		for _, r := range it.Actions {
			if key, ok := varParam[r.Name]; ok && !r.Denied && r.Error == "" {
				var m map[string]any
				if json.Unmarshal(r.Params, &m) == nil {
					val, _ := m[key].(string)
					if sm := secretRE.FindStringSubmatch(val); sm != nil {
						taken[sm[1]] = true
					}
				}
			}
		}
	}
	var out []Variable
	listed := map[string]bool{}
	for _, it := range h.Items {
		for j, r := range it.Actions {
			key, ok := varParam[r.Name]
			if !ok || r.Denied || r.Error != "" {
				continue
			}
			var m map[string]any
			if json.Unmarshal(r.Params, &m) != nil {
				continue
			}
			val, _ := m[key].(string)
			v := Variable{Step: it.Step, Action: j}
			if sm := secretRE.FindStringSubmatch(val); sm != nil {
				if listed[sm[1]] {
					continue // one secret, however often typed
				}
				v.Secret, v.Name = true, sm[1]
				listed[v.Name] = true
				out = append(out, v)
				continue
			}
			v.Value = val
			base := varName(r)
			v.Name = base
			for n := 2; taken[v.Name]; n++ {
				v.Name = fmt.Sprintf("%s_%d", base, n)
			}
			taken[v.Name] = true
			out = append(out, v)
		}
	}
	return out
}

// varName names an action's value from its element.
func varName(r ActionRecord) string {
	if e := r.Element; e != nil {
		for _, k := range []string{"name", "id", "placeholder", "aria-label"} {
			if s := snake(e.Attrs[k]); s != "" {
				return s
			}
		}
		if s := snake(e.Name); s != "" {
			return s
		}
		if s := snake(e.Attrs["type"]); s != "" && s != "text" {
			return s
		}
	}
	switch r.Name {
	case "upload_file":
		return "file"
	case "select_dropdown":
		return "choice"
	}
	return "text"
}

// snake makes s a variable name: lower case words joined by "_", at most
// five words.
func snake(s string) string {
	var words []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			words = append(words, cur.String())
			cur.Reset()
		}
	}
	prevLower := false
	for _, r := range s {
		switch {
		case unicode.IsUpper(r):
			if prevLower {
				flush()
			}
			cur.WriteRune(unicode.ToLower(r))
			prevLower = false
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur.WriteRune(r)
			prevLower = true
		default:
			flush()
			prevLower = false
		}
	}
	flush()
	if len(words) > 5 {
		words = words[:5]
	}
	return strings.Join(words, "_")
}

// describeElement words a recorded element for people and the model.
func describeElement(e *match.Element) string {
	if e == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("<" + e.Tag)
	for _, k := range []string{"id", "name", "type", "role", "placeholder", "aria-label", "href"} {
		if v := e.Attrs[k]; v != "" {
			fmt.Fprintf(&b, " %s=%q", k, v)
		}
	}
	b.WriteString(">")
	if e.Name != "" {
		fmt.Fprintf(&b, " %q", e.Name)
	}
	return b.String()
}

// cascade lists the strategies that can find e, with the values they
// compare, strongest first.
func cascade(e *match.Element) []string {
	if e == nil {
		return nil
	}
	var out []string
	if e.Hash != "" {
		out = append(out, fmt.Sprintf("%s %s", match.ByHash, e.Hash))
	}
	if e.StableHash != "" {
		out = append(out, fmt.Sprintf("%s %s", match.ByStableHash, e.StableHash))
	}
	if e.Name != "" {
		out = append(out, fmt.Sprintf("%s %s %q", match.ByRoleName, orDash(e.Role), e.Name))
	}
	var attrs []string
	for _, k := range []string{"id", "name", "data-testid", "placeholder", "aria-label", "href"} {
		if v := e.Attrs[k]; v != "" {
			attrs = append(attrs, fmt.Sprintf("%s=%q", k, v))
		}
	}
	if len(attrs) > 0 {
		out = append(out, fmt.Sprintf("%s %s", match.ByAttributes, strings.Join(attrs, " ")))
	}
	if e.XPath != "" {
		out = append(out, fmt.Sprintf("%s %s", match.ByXPath, e.XPath))
	}
	if e.Similar > 1 {
		out = append(out, fmt.Sprintf("%s %d of %d (asks the approval policy)", match.ByPosition, e.Ordinal, e.Similar))
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func planReplay(h *History, opt ReplayOptions) (*ReplayPlan, error) {
	steps, vars, err := compile(h, opt)
	if err != nil {
		return nil, err
	}
	p := &ReplayPlan{Task: h.Task}
	reg := opt.Settings.Tools
	if reg == nil {
		reg = DefaultRegistry()
	}
	for _, v := range vars {
		if val, ok := opt.Vars[v.Name]; ok {
			v.Value = val
		}
		p.Vars = append(p.Vars, v)
	}
	for _, s := range steps {
		ps := PlannedStep{Step: s.step, URL: s.url, Goal: s.goal}
		for _, ra := range s.actions {
			pa := PlannedAction{Action: ra.pos, Name: ra.rec.Name, Params: ra.call.Params, Var: ra.v, Skipped: ra.skip}
			pa.Target = describeElement(ra.rec.Element)
			pa.Cascade = cascade(ra.rec.Element)
			if spec, ok := reg.Get(ra.rec.Name); ra.skip == "" && ra.rec.Element == nil && ok && spec.TargetsIndex && paramIndex(ra.call.Params) > 0 {
				p.Notes = append(p.Notes, fmt.Sprintf("step %d action %d (%s): recorded without its element (an older history): its recorded index is a choice by position, put to the approval policy", s.step, ra.pos+1, ra.rec.Name))
			}
			if ra.skip == "" && ra.rec.Name == "extract" {
				pa.NeedsModel = true
				if opt.Model == nil {
					p.Notes = append(p.Notes, fmt.Sprintf("step %d: extract needs a model (none is configured: the replay stops there)", s.step))
				}
			}
			ps.Actions = append(ps.Actions, pa)
		}
		p.Steps = append(p.Steps, ps)
	}
	p.Notes = append(p.Notes, unusedRebase(h, opt.Rebase)...)
	return p, nil
}

// unusedRebase notes the Rebase origins no recorded URL has (a typo, or
// the recording's origin is another).
func unusedRebase(h *History, rebase map[string]string) []string {
	if len(rebase) == 0 {
		return nil
	}
	seen := map[string]bool{}
	add := func(raw string) {
		if u, err := url.Parse(raw); err == nil && u.Host != "" {
			seen[originKey(u)] = true
		}
	}
	for _, it := range h.Items {
		add(it.State.URL)
		for _, t := range it.State.Tabs {
			add(t.URL)
		}
		for _, r := range it.Actions {
			if r.Name == "navigate" {
				var p NavigateParams
				if json.Unmarshal(r.Params, &p) == nil {
					add(p.URL)
				}
			}
			if r.Element != nil {
				add(r.Element.Attrs["href"])
			}
		}
	}
	var out []string
	for from := range rebase {
		if u, err := parseOrigin(from); err == nil && !seen[originKey(u)] {
			out = append(out, fmt.Sprintf("rebase %s: no recorded URL has this origin", from))
		}
	}
	sort.Strings(out)
	return out
}

func (p *ReplayPlan) writeText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Replay plan: %d steps\nTask: %s\n", len(p.Steps), clipLine(p.Task, 200))
	if len(p.Vars) > 0 {
		b.WriteString("Variables:\n")
		for _, v := range p.Vars {
			if v.Secret {
				fmt.Fprintf(&b, "  %s (secret, from sensitive data) step %d\n", v.Name, v.Step)
			} else {
				fmt.Fprintf(&b, "  %s = %q step %d\n", v.Name, v.Value, v.Step)
			}
		}
	}
	for _, s := range p.Steps {
		fmt.Fprintf(&b, "Step %d", s.Step)
		if s.URL != "" {
			fmt.Fprintf(&b, " on %s", s.URL)
		} else {
			b.WriteString(" (any page)")
		}
		if s.Goal != "" {
			fmt.Fprintf(&b, ": %s", clipLine(s.Goal, 120))
		}
		b.WriteString("\n")
		for _, a := range s.Actions {
			fmt.Fprintf(&b, "  %d. %s %s", a.Action+1, a.Name, clipLine(string(a.Params), 160))
			if a.Var != "" {
				fmt.Fprintf(&b, " [var %s]", a.Var)
			}
			if a.Skipped != "" {
				fmt.Fprintf(&b, " (skipped: %s)", a.Skipped)
			}
			if a.NeedsModel {
				b.WriteString(" (asks the model)")
			}
			b.WriteString("\n")
			if a.Target != "" {
				fmt.Fprintf(&b, "     target %s\n", a.Target)
				for _, c := range a.Cascade {
					fmt.Fprintf(&b, "       match by %s\n", c)
				}
			}
		}
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "Note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func clipLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// mapTab finds, among the tabs open now, the one a recorded tab_id named:
// tab ids differ from run to run, so the recorded tab's URL (rebased) is
// looked up by route. ok is false when no tab, or more than one, has it.
func mapTab(ref string, recorded, now []events.TabInfo) (string, bool) {
	want := ""
	for _, t := range recorded {
		if t.TargetID == ref || TabRef(t.TargetID) == ref {
			want = t.URL
			break
		}
	}
	if want == "" {
		return "", false
	}
	found := ""
	for _, t := range now {
		if sameRoute(want, t.URL) {
			if found != "" {
				return "", false
			}
			found = t.TargetID
		}
	}
	return found, found != ""
}
