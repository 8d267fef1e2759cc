package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/providers"
	"github.com/browseragent/browseragent/agent/match"
	"github.com/browseragent/browseragent/trace"
)

// exitReplay is replay's (and demo --replay's) exit code when a recorded
// step could not be replayed: its element is missing or ambiguous, its
// page is not where the recording was, or its outcome differs, and no model
// mended it. The error names the step, the action and the candidates.
const exitReplay = 5

// varFlags collects --var name=value pairs.
type varFlags map[string]string

func (v varFlags) String() string { return "" }

func (v varFlags) Set(s string) error {
	name, val, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("want name=value, got %q", s)
	}
	v[strings.TrimSpace(name)] = val
	return nil
}

// rebaseFlags collects --rebase OLD_ORIGIN=NEW_ORIGIN pairs.
type rebaseFlags map[string]string

func (r rebaseFlags) String() string { return "" }

func (r rebaseFlags) Set(s string) error {
	from, to, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("want OLD_ORIGIN=NEW_ORIGIN, got %q", s)
	}
	o1, err := origin(from)
	if err != nil {
		return err
	}
	o2, err := origin(to)
	if err != nil {
		return err
	}
	r[o1] = o2
	return nil
}

// origin returns scheme://host[:port] of an absolute http(s) URL.
func origin(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an origin like https://example.com or http://127.0.0.1:8080", s)
	}
	return u.Scheme + "://" + u.Host, nil
}

// replayFlags are replay's own flags (demo --replay sets the same options
// itself).
type replayFlags struct {
	vars           varFlags
	rebase         rebaseFlags
	maxHeal        int
	settleTimeout  time.Duration
	allowAmbiguous bool
	allowEvaluate  bool
}

func (f *replayFlags) register(fs *flag.FlagSet) {
	f.vars, f.rebase = varFlags{}, rebaseFlags{}
	fs.Var(f.vars, "var", "replace a recorded value: name=value (repeatable); --dry-run lists the names (typed text, selected options, uploaded files)")
	fs.Var(f.rebase, "rebase", "replay on another origin: OLD_ORIGIN=NEW_ORIGIN, e.g. http://127.0.0.1:8080=https://staging.example.com (repeatable)")
	fs.IntVar(&f.maxHeal, "max-heal-calls", agent.DefaultMaxHealCalls, "model calls allowed to mend one recorded step (with --model)")
	fs.BoolVar(&f.allowAmbiguous, "allow-ambiguous", false, "accept an element chosen only by its position among look-alikes (default: refuse it; the step breaks, exit code 5, and the candidates are listed)")
	fs.BoolVar(&f.allowEvaluate, "allow-evaluate", false, "run recorded evaluate actions (JavaScript from the history) and the heal model's (default: refuse them; the step breaks, exit code 5)")
	fs.DurationVar(&f.settleTimeout, "settle-timeout", agent.DefaultSettleTimeout, "how long a step waits for its page (URL, element, settled) before it counts as broken")
}

func (f *replayFlags) options() (agent.ReplayOptions, error) {
	if f.maxHeal < 1 {
		return agent.ReplayOptions{}, usagef("--max-heal-calls must be at least 1")
	}
	if f.settleTimeout <= 0 {
		return agent.ReplayOptions{}, usagef("--settle-timeout must be positive")
	}
	return agent.ReplayOptions{Vars: map[string]string(f.vars), Rebase: map[string]string(f.rebase),
		MaxHealCalls: f.maxHeal, SettleTimeout: f.settleTimeout}, nil
}

func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	var bf browserFlags
	bf.register(fs)
	var rf replayFlags
	rf.register(fs)
	model := fs.String("model", "", "heal the steps that break with this model, as provider:name (default: none; a broken step ends the replay with exit code 5)")
	baseURL := fs.String("base-url", "", "the heal model's API base URL (OpenAI-compatible servers, proxies)")
	dryRun := fs.Bool("dry-run", false, "print the plan (steps, how each element will be matched, variables) and exit; no browser is started")
	outDir := fs.String("out", "", "folder for the replay's trace, history, screenshots and report (default ./out/replay-TIMESTAMP)")
	asJSON := fs.Bool("json", false, "print the result (or the plan) as JSON")
	var files fileFlags
	fs.Var(&files, "file", "a local file the replay may upload as recorded (repeatable); a recorded upload path is used only when named here or given with --var")
	secrets := secretFlags{}
	fs.Var(secrets, "secret-env", "the value of a recorded <secret>name</secret>, read from an environment variable: name=ENVVAR (repeatable); never stored")
	var hf humanFlags
	hf.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: browseragent replay [flags] HISTORY.json")
		fmt.Fprintln(stderr, "Runs a recorded run's actions again without the model (docs/replay.md). Replay only histories you")
		fmt.Fprintln(stderr, "trust: they navigate, type and submit as recorded; check --dry-run first and use --allowed-domains.")
		fmt.Fprintln(stderr, "Exit codes: 0 replayed and the recording's done succeeded, 1 failed otherwise, 2 bad command line,")
		fmt.Fprintln(stderr, "5 a step could not be replayed.")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		for _, a := range fs.Args()[min(1, fs.NArg()):] {
			if strings.HasPrefix(a, "-") {
				return usagef("flags go before HISTORY.json: %q came after it", a)
			}
		}
		return usagef("want the history file (history.json of a run's --out folder) as one argument")
	}
	opts, err := rf.options()
	if err != nil {
		return err
	}
	if *baseURL != "" && *model == "" {
		return usagef("--base-url needs --model")
	}
	stdinTTY := stdinIsTerminal()
	if err := hf.check(stdinTTY, stderrIsTerminal()); err != nil {
		return err
	}
	h, err := loadRecording(fs.Arg(0))
	if err != nil {
		return err
	}
	if *model != "" {
		// The plan only needs to know a model will heal; a dry run builds
		// none, so it needs no API key.
		opts.Model = plannedModel(*model)
	}
	opts.Settings.SensitiveData = secrets
	plan, err := planRecording(h, opts)
	if err != nil {
		return err
	}
	missing := missingSecrets(plan, secrets)
	if *dryRun {
		for _, v := range missing {
			plan.Notes = append(plan.Notes, fmt.Sprintf("step %d types <secret>%s</secret>: no --secret-env %s=ENVVAR given; the replay would refuse to start", v.Step, v.Name, v.Name))
		}
		if *asJSON {
			printJSON(stdout, plan)
			return nil
		}
		return plan.WriteText(stdout)
	}
	if len(missing) > 0 {
		v := missing[0]
		return usagef("step %d types <secret>%s</secret>: pass --secret-env %s=ENVVAR", v.Step, v.Name, v.Name)
	}
	var m llm.Model
	if *model != "" {
		if m, err = providers.New(*model, providers.Options{BaseURL: *baseURL}); err != nil {
			return err
		}
	}
	opts.Model = m
	dir := *outDir
	if dir == "" {
		dir = filepath.Join("out", "replay-"+time.Now().UTC().Format("20060102-150405"))
	}
	uploads, err := trustedUploads(plan, opts.Vars, files)
	if err != nil {
		return err
	}
	set := agent.Settings{AvailableFilePaths: uploads,
		Approver: replayApprover{allowAmbiguous: rf.allowAmbiguous, allowEvaluate: rf.allowEvaluate}}
	out, err := runAgent(ctx, runConfig{
		task: h.Task, model: m, browser: bf, outDir: dir,
		settings: set,
		quiet:    *asJSON || !isTerminal(stdout), secrets: secrets,
		human: hf, stdinTTY: stdinTTY,
		replay: &replayConfig{history: h, path: fs.Arg(0), opts: opts},
	}, stderr)
	noteReplayError(out, err)
	printReplayOutcome(stdout, out, *asJSON)
	return replayExit(out, err)
}

// plannedModel stands for the heal model in a plan: PlanReplay only asks
// whether there is one.
type plannedModel string

func (m plannedModel) Name() string { return string(m) }

func (m plannedModel) Generate(context.Context, llm.Request) (*llm.Response, error) {
	return nil, errors.New("replay: the plan's model is not callable")
}

// missingSecrets are the plan's secrets without a value in secrets.
func missingSecrets(p *agent.ReplayPlan, secrets map[string]string) []agent.Variable {
	var out []agent.Variable
	for _, v := range p.Vars {
		if _, ok := secrets[v.Name]; v.Secret && !ok {
			out = append(out, v)
		}
	}
	return out
}

// replayApprover is replay's approval policy. An element the matcher
// could only pick by its position among look-alikes is refused unless
// allowAmbiguous (a wrong "Delete" costs more than a stop). evaluate
// (JavaScript from the history, or from the heal model) is refused unless
// allowEvaluate: a history may come from anyone, and its script would run
// in the user's pages (--cdp-url). Everything else runs.
type replayApprover struct {
	allowAmbiguous, allowEvaluate bool
}

// Approve implements agent.Approver.
func (a replayApprover) Approve(_ context.Context, req agent.ApprovalRequest) (agent.Decision, error) {
	switch {
	case req.Match != nil && req.Match.Ambiguous && !a.allowAmbiguous:
		return agent.Decision{Reason: "the element was chosen by its position among look-alikes; pass --allow-ambiguous to accept such choices"}, nil
	case req.Action == "evaluate" && !a.allowEvaluate:
		return agent.Decision{Reason: "replay runs no JavaScript from a history unless --allow-evaluate is given"}, nil
	}
	return agent.Decision{Allow: true}, nil
}

// loadRecording reads a history file and says what is wrong with it in
// words.
func loadRecording(path string) (*agent.History, error) {
	h, err := agent.LoadHistory(path)
	if err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("no history file %s", path)
		case errors.As(err, &se), errors.As(err, &te), strings.Contains(err.Error(), "unknown field"), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return nil, fmt.Errorf("%s is not a history written by browseragent (run's or demo's --out folder has history.json): %w", path, err)
		}
		return nil, err
	}
	return h, nil
}

// planRecording plans the replay, turning a bad --var into a usage error
// and an empty recording into words.
func planRecording(h *agent.History, opts agent.ReplayOptions) (*agent.ReplayPlan, error) {
	plan, err := agent.PlanReplay(h, opts)
	switch {
	case errors.Is(err, agent.ErrReplayVars):
		return nil, usagef("--var: %v", err)
	case errors.Is(err, agent.ErrReplayEmpty):
		return nil, fmt.Errorf("the history has no actions to replay (%w)", err)
	}
	return plan, err
}

// plannedUpload is one upload_file the plan runs.
type plannedUpload struct {
	step     int
	variable string
	path     string
}

func plannedUploads(p *agent.ReplayPlan) []plannedUpload {
	var out []plannedUpload
	for _, s := range p.Steps {
		for _, a := range s.Actions {
			if a.Name != "upload_file" || a.Skipped != "" {
				continue
			}
			var params struct {
				Path string `json:"path"`
			}
			if json.Unmarshal(a.Params, &params) == nil && params.Path != "" {
				out = append(out, plannedUpload{step: s.Step, variable: a.Var, path: params.Path})
			}
		}
	}
	return out
}

// trustedUploads are the files replay may upload. A history is data that
// may come from anyone, and a recorded path could name any local file
// (~/.ssh/id_ed25519): an upload runs only when its file was named on the
// command line, with --var for its variable (the file must exist) or with
// --file.
func trustedUploads(p *agent.ReplayPlan, vars map[string]string, files []string) ([]string, error) {
	var out []string
	for _, u := range plannedUploads(p) {
		val, byVar := vars[u.variable]
		if byVar {
			// A missing file would fail at its step, after the steps
			// before it had their side effects.
			if st, err := os.Stat(val); err != nil || st.IsDir() {
				what := "a folder"
				if err != nil {
					what = "no such file"
				}
				return nil, usagef("--var %s=%s: step %d uploads it, and it is %s", u.variable, val, u.step, what)
			}
			out = append(out, u.path)
			continue
		}
		abs, _ := filepath.Abs(u.path)
		if slices.Contains(files, abs) {
			out = append(out, u.path)
			continue
		}
		hint := "--file " + u.path
		if u.variable != "" {
			hint = fmt.Sprintf("--var %s=%s (or %s)", u.variable, u.path, hint)
		}
		return nil, usagef("step %d uploads %s: a recorded upload path is used only when the command line names it; pass %s", u.step, u.path, hint)
	}
	return out, nil
}

// printReplayOutcome prints a replay's end: the run's, then what replay
// did.
func printReplayOutcome(w io.Writer, out *runOutcome, asJSON bool) {
	printOutcome(w, out, asJSON)
	if out == nil || asJSON || out.Replay == nil {
		return
	}
	r := out.Replay
	replayed, failed, skipped, ambiguous := 0, 0, 0, 0
	by := map[string]int{}
	for _, a := range r.Actions {
		switch {
		case a.Skipped:
			skipped++
		case a.Error != "":
			failed++
		default:
			replayed++
		}
		if a.Match != nil && a.Match.Strategy != "" {
			by[string(a.Match.Strategy)]++
		}
		if a.Match != nil && a.Match.Ambiguous && a.RunStep > 0 && !a.Skipped {
			ambiguous++
		}
	}
	var ways []string
	for k, n := range by {
		ways = append(ways, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(ways)
	fmt.Fprintf(w, "replay: %d of %d actions replayed, ", replayed, len(r.Actions))
	if failed > 0 {
		fmt.Fprintf(w, "%d failed, ", failed)
	}
	fmt.Fprintf(w, "%d skipped, %d healed steps, %d model calls", skipped, r.Healed, r.ModelCalls)
	if len(ways) > 0 {
		fmt.Fprintf(w, "; elements found by %s", strings.Join(ways, ", "))
	}
	if ambiguous > 0 {
		fmt.Fprintf(w, "; %d chosen by position among look-alikes (allowed)", ambiguous)
	}
	fmt.Fprintln(w)
}

// replayFailure is, in replay --json's output, the recorded step that
// could not be replayed (from *agent.ReplayError).
type replayFailure struct {
	Step   int    `json:"step"`
	Action int    `json:"action"`
	Name   string `json:"name,omitempty"`
	URL    string `json:"url,omitempty"`
	// Element describes the recorded element.
	Element string `json:"element,omitempty"`
	// Reason is the ErrReplay* sentinel's text ("agent: replay: element not
	// found"); Error the whole message.
	Reason     string            `json:"reason"`
	Error      string            `json:"error"`
	Candidates []match.Candidate `json:"candidates,omitempty"`
}

// replaySentinels are the reasons a replayed step breaks, as
// replayFailure.Reason words them.
var replaySentinels = []error{agent.ErrReplayNoMatch, agent.ErrReplayAmbiguous, agent.ErrReplayOutcome,
	agent.ErrReplayPrecondition, agent.ErrReplayNeedsModel, agent.ErrReplayVars, agent.ErrReplayEmpty}

// noteReplayError puts a *agent.ReplayError in err into out's replay
// summary.
func noteReplayError(out *runOutcome, err error) {
	var re *agent.ReplayError
	if out == nil || out.Replay == nil || !errors.As(err, &re) {
		return
	}
	f := &replayFailure{Step: re.Step, Action: re.Action, Name: re.Name, URL: re.URL, Element: re.Element,
		Reason: agent.ErrReplay.Error(), Error: re.Error(), Candidates: re.Candidates}
	for _, s := range replaySentinels {
		if errors.Is(re, s) {
			f.Reason = s.Error()
			break
		}
	}
	out.Replay.Error = f
}

// replayExit maps a replay's end to the command's error (and exit code).
func replayExit(out *runOutcome, err error) error {
	var re *agent.ReplayError
	switch {
	case errors.As(err, &re):
		return &exitError{code: exitReplay, err: err}
	case err != nil:
		return err
	case out == nil || out.Result == nil || !out.Result.Success:
		return errNotSuccessful
	}
	return nil
}

// replayMeta is the replay trace's "replay" metadata: which history was
// replayed (its absolute path and SHA-256, and the head of the recording's
// trace.jsonl when one sits next to it), the names of the --var variables
// (their values are typed, and in the trace already where typed), the
// rebase map and the heal model. A recording trace whose chain is broken
// is warned about on w.
func replayMeta(rc *replayConfig, heal llm.Model, w io.Writer) map[string]any {
	md := map[string]any{}
	if rc.path != "" {
		if abs, err := filepath.Abs(rc.path); err == nil {
			md["history"] = abs
		}
		if b, err := os.ReadFile(rc.path); err == nil {
			md["history_sha256"] = fmt.Sprintf("%x", sha256.Sum256(b))
		}
		rec := filepath.Join(filepath.Dir(rc.path), "trace.jsonl")
		if _, err := os.Stat(rec); err == nil {
			rep, err := trace.VerifyFile(rec)
			switch {
			case err != nil:
				md["recording_trace_error"] = err.Error()
				if w != nil {
					fmt.Fprintf(w, "warning: the recording's trace %s does not verify: %v\n", rec, err)
				}
			default:
				md["recording_trace_head"] = rep.Head
				md["recording_trace_closed"] = rep.Closed
			}
		}
	}
	if len(rc.opts.Vars) > 0 {
		md["vars"] = slices.Sorted(maps.Keys(rc.opts.Vars))
	}
	if len(rc.opts.Rebase) > 0 {
		md["rebase"] = rc.opts.Rebase
	}
	if heal != nil {
		md["heal_model"] = heal.Name()
	}
	return md
}
