// Package report turns an audit trace into one self-contained HTML file: the
// run's result, a timeline of steps with their screenshots (embedded) marked
// where each action landed (the element's box, the click point) and the
// page after the actions that changed it, each step's own timeline
// (observe, model, actions, a person's hand-offs), the model's evaluation,
// memory and goal, each action with its verdict, evidence and the network
// requests it caused, the step's hand-offs to a person, the requests the
// URL policy refused (per step, by host, and
// one row per request), errors, timings, the tokens by kind (input,
// cached, cache writes, output, reasoning) and the cost per step, per model
// call and for the run, and the bus's event counts.
// It first verifies the trace and shows the verdict at the top, so a reader
// knows whether the page describes an intact trace.
package report

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm"
	"github.com/browseragent/browseragent/agent/llm/pricing"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/trace"
)

//go:embed report.html.tmpl report.css
var files embed.FS

// styles is the report's stylesheet (report.css), inlined so that the
// report stays one file.
var styles = sync.OnceValue(func() template.CSS {
	b, err := files.ReadFile("report.css")
	if err != nil {
		panic(err) // embedded: cannot happen
	}
	return template.CSS(b)
})

// page is parsed on first use, not at init: the command line links this
// package, and every short command (a shell step) would pay for the parse.
var page = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{
		"css": styles,
		"inc": func(i int) int { return i + 1 },
		"add": func(a, b int) int { return a + b },
		"dur": func(d time.Duration) string { return d.Round(time.Millisecond).String() },
		"ms":  func(v float64) string { return fmt.Sprintf("%.0f ms", v) },
		// took is a phase's length: ms under a second, s above.
		"took": func(v float64) string {
			if v >= 1000 {
				return fmt.Sprintf("%.1f s", v/1000)
			}
			return fmt.Sprintf("%.0f ms", v)
		},
		"reqStatus": reqStatus,
		"source":    sourceLabel,
		"matchText": matchText,
		"matchCls":  matchClass,
		"elemText":  elemText,
		"candText":  candText,
		"reqClass":  reqClass,
		"secs":      func(v float64) string { return fmt.Sprintf("%.1f s", v/1000) },
		"join":      strings.Join,
		// tokens words a record's token counts by kind.
		"tokens": func(t trace.Tokens) string {
			return agent.FormatUsage(llm.Usage{PromptTokens: t.PromptTokens, CompletionTokens: t.CompletionTokens,
				CachedTokens: t.CachedTokens, CacheWriteTokens: t.CacheWriteTokens, ReasoningTokens: t.ReasoningTokens})
		},
		// cost words a record's cost; "" when none was recorded.
		"cost": func(c *pricing.Cost) string {
			if c == nil {
				return ""
			}
			return c.String()
		},
		"usd": pricing.FormatUSD,
		"json": func(v json.RawMessage) string {
			var b bytes.Buffer
			if json.Indent(&b, v, "", "  ") != nil {
				return string(v)
			}
			return b.String()
		},
	}).ParseFS(files, "report.html.tmpl"))
})

// Data is what the template renders; exported so that callers can render
// their own templates from a trace.
type Data struct {
	Title     string
	Generated time.Time
	Meta      map[string]any
	Run       *trace.Run
	// Tasks are the run records before the last: the tasks a driven
	// session (MCP, shell) ran with a model, in order; Run is then the
	// session's own record.
	Tasks   []trace.Run
	Steps   []Step
	Models  []trace.Model
	Kinds   []KindCount
	Errors  []string // bus errors, in order
	Verify  Verification
	Records int
	// BlockedRequests are the requests the URL policy refused, one per
	// RequestBlocked event, in trace order: at most MaxBlockedRequests of
	// BlockedTotal.
	BlockedRequests []BlockedRequest
	BlockedTotal    int
	// Frames is the screencast filmstrip, when the run was recorded.
	Frames []Frame
	// FramesTotal is how many frames the recording holds (Frames may be a
	// sample of them).
	FramesTotal int
	// Sources counts where the steps' actions came from (model, replay,
	// heal, cache) and the model calls that saved.
	Sources Sources
}

// Frame is one screencast frame ready to embed.
type Frame struct {
	Time  string
	Image template.URL
}

// FramesDir is where a recorded run keeps its screencast, relative to the
// trace: the recording watchdog's frames and its frames.jsonl manifest.
const FramesDir = "frames"

// MaxFrames caps how many frames the report embeds (sampled evenly).
const MaxFrames = 60

// Step is a trace step with its screenshot ready to embed.
type Step struct {
	trace.Step
	// Image is a data: URL of the screenshot, or empty.
	Image template.URL
	// ImageProblem says why a recorded screenshot is not shown or not
	// trusted (missing file, hash mismatch).
	ImageProblem string
	// Marks are where the step's actions landed, to draw over Image.
	Marks []Mark
	// MarksProblem says why the actions' marks are not drawn (no
	// viewport recorded, no screenshot).
	MarksProblem string
	// After is the page after the step's actions, when they changed it:
	// the next step's screenshot, or the one taken after the run's last
	// step. AfterCaption says which; AfterProblem why it is not shown.
	After        template.URL
	AfterCaption string
	AfterProblem string
	// AfterMissing says that the actions changed the page but no
	// screenshot shows it after them.
	AfterMissing string
	// Phases are the step's timeline: observe, model, actions.
	Phases []Phase
	// RunIndex is how many run records precede the step in the trace: a
	// driven session's tasks each number their steps from 1.
	RunIndex int
}

// MaxBlockedRequests caps the refused requests the report lists (a page
// retrying a beacon in a loop must not make the report unreadable); the
// total is shown.
const MaxBlockedRequests = 500

// BlockedRequest is one request the URL policy refused, from the
// dispatch record of its RequestBlocked event.
type BlockedRequest struct {
	Time time.Time
	// Type is Chromium's resource type ("Script", "XHR", ...) or
	// "Connection" for a connection the network guard refused.
	Type      string
	URL       string
	Host      string
	Initiator string
	Reason    string
	Layer     string // "interception" or "guard"
	TabID     string
	// Summary is the record's summary, when it kept no data (an event
	// larger than the trace keeps whole); the fields above are then empty.
	Summary string
}

// KindCount is how many events of one kind the bus processed.
type KindCount struct {
	Kind   string
	Count  int
	Failed int
}

// Verification is the hash-chain verdict shown at the top.
type Verification struct {
	OK     bool
	Closed bool
	Head   string
	Error  string
}

// Load reads and verifies the trace at path and gathers the report data.
// Screenshots are resolved relative to the trace's directory. A trace that
// fails verification still renders (with the failure shown), as long as
// its lines parse.
func Load(path string) (*Data, error) {
	recs, err := trace.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d := &Data{Title: "browseragent run", Generated: time.Now().UTC(), Records: len(recs)}
	rep, verr := trace.VerifyFile(path)
	d.Verify = Verification{OK: verr == nil, Closed: rep.Closed, Head: rep.Head}
	if verr != nil {
		d.Verify.Error = verr.Error()
	}
	dir := filepath.Dir(path)
	kinds := map[string]*KindCount{}
	runs := 0
	calls := map[stepKey]int{} // the model calls made for a step
	for _, r := range recs {
		switch r.Type {
		case trace.TypeOpen:
			_ = json.Unmarshal(r.Data, &d.Meta)
			if task, ok := d.Meta["task"].(string); ok && task != "" {
				d.Title = task
			}
		case trace.TypeRun:
			runs++
			var run trace.Run
			if json.Unmarshal(r.Data, &run) == nil {
				if d.Run != nil {
					d.Tasks = append(d.Tasks, *d.Run)
				}
				d.Run = &run
			}
		case trace.TypeStep:
			var st trace.Step
			if json.Unmarshal(r.Data, &st) == nil {
				s := embedShot(dir, st)
				s.RunIndex = runs
				d.Steps = append(d.Steps, s)
			}
		case trace.TypeModel:
			var m trace.Model
			if json.Unmarshal(r.Data, &m) == nil {
				d.Models = append(d.Models, m)
				if m.Purpose == "" || m.Purpose == "step" {
					calls[stepKey{runs, m.Step}]++
				}
			}
		case trace.TypeBus:
			if r.Phase == "dispatched" && r.Kind == events.RequestBlocked.Name {
				d.BlockedTotal++
				if len(d.BlockedRequests) < MaxBlockedRequests {
					d.BlockedRequests = append(d.BlockedRequests, blockedRequest(r))
				}
			}
			if r.Phase != "completed" {
				continue
			}
			k := kinds[r.Kind]
			if k == nil {
				k = &KindCount{Kind: r.Kind}
				kinds[r.Kind] = k
			}
			k.Count++
			if r.Error != "" {
				k.Failed++
				d.Errors = append(d.Errors, fmt.Sprintf("%s #%d: %s", r.Kind, r.EventID, r.Error))
			}
		}
	}
	for _, k := range kinds {
		d.Kinds = append(d.Kinds, *k)
	}
	sort.Slice(d.Kinds, func(i, j int) bool { return d.Kinds[i].Kind < d.Kinds[j].Kind })
	addEvidence(dir, d.Steps)
	runList := d.Tasks
	if d.Run != nil {
		runList = append(slices.Clone(d.Tasks), *d.Run)
	}
	d.Sources = sumSources(d.Steps, calls, sumCache(runList...))
	d.Frames, d.FramesTotal = loadFrames(filepath.Join(dir, FramesDir))
	return d, nil
}

// blockedRequest reads a RequestBlocked dispatch record.
func blockedRequest(r trace.Record) BlockedRequest {
	var ev events.RequestBlockedEvent
	if len(r.Data) == 0 || json.Unmarshal(r.Data, &ev) != nil {
		return BlockedRequest{Time: r.Time, Summary: r.Summary}
	}
	return BlockedRequest{Time: r.Time, Type: ev.ResourceType, URL: ev.URL, Host: ev.Host, Initiator: ev.Initiator,
		Reason: ev.Reason, Layer: ev.Layer, TabID: ev.TabID}
}

// loadFrames reads a recording's manifest (one JSON object per line with
// "file" and "time") and embeds an even sample of at most MaxFrames frames,
// in time order. A missing recording is no error: most runs have none.
func loadFrames(dir string) ([]Frame, int) {
	raw, err := os.ReadFile(filepath.Join(dir, "frames.jsonl"))
	if err != nil {
		return nil, 0
	}
	type line struct {
		File string `json:"file"`
		Time string `json:"time"`
	}
	var lines []line
	for _, l := range strings.Split(string(raw), "\n") {
		var fl line
		if json.Unmarshal([]byte(l), &fl) == nil && fl.File != "" && !strings.ContainsAny(fl.File, `/\`) {
			lines = append(lines, fl)
		}
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].Time < lines[j].Time })
	step := 1
	if len(lines) > MaxFrames {
		step = (len(lines) + MaxFrames - 1) / MaxFrames
	}
	var out []Frame
	for i := 0; i < len(lines); i += step {
		b, err := os.ReadFile(filepath.Join(dir, lines[i].File))
		if err != nil {
			continue
		}
		mime := "image/jpeg"
		if strings.HasSuffix(lines[i].File, ".png") {
			mime = "image/png"
		}
		out = append(out, Frame{Time: lines[i].Time, Image: template.URL("data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(b))})
	}
	return out, len(lines)
}

// embedShot reads a step's screenshot and checks it against its recorded
// hash. Paths may not leave the trace's directory.
func embedShot(dir string, st trace.Step) Step {
	out := Step{Step: st}
	out.Image, out.ImageProblem = embedFile(dir, st.Screenshot, st.ScreenshotSHA256)
	return out
}

// embedFile reads a screenshot at rel (relative to dir) and returns it as
// a data: URL, or why it is not shown: a path leaving dir, a missing file,
// a hash (sum, when recorded) it does not match. rel "" is neither.
func embedFile(dir, rel, sum string) (template.URL, string) {
	if rel == "" {
		return "", ""
	}
	p := filepath.Join(dir, filepath.Clean(rel))
	if r, err := filepath.Rel(dir, p); err != nil || strings.HasPrefix(r, "..") {
		return "", "screenshot path leaves the trace's folder: not shown"
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", "screenshot missing: " + rel
	}
	if sum != "" {
		h := sha256.Sum256(b)
		if hex.EncodeToString(h[:]) != sum {
			return "", "screenshot does not match the hash in the trace: not shown"
		}
	}
	return template.URL("data:" + shotMediaType(rel) + ";base64," + base64.StdEncoding.EncodeToString(b)), ""
}

// shotMediaType is a screenshot file's media type by its extension (the
// agent names them step_N.png, .jpg or .webp after their format).
func shotMediaType(name string) string {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".webp":
		return "image/webp"
	}
	return "image/png"
}

// reqStatus words what became of a request an action caused.
func reqStatus(r events.Request) string {
	switch {
	case r.Blocked && strings.HasPrefix(r.Error, "blocked"):
		return r.Error
	case r.Blocked:
		return "blocked: " + r.Error
	case r.Canceled && r.Status == 0:
		return "canceled before an answer (unconfirmed)"
	case r.Error != "":
		return "failed: " + r.Error
	case r.Pending && r.Status == 0:
		return "pending (no answer yet)"
	case r.Status >= 400:
		return fmt.Sprintf("failed: %d", r.Status)
	case r.Status != 0:
		return fmt.Sprint(r.Status)
	}
	return ""
}

// reqClass is a request row's highlight: req-failed (red) for a failed
// write, document or navigation, the kind that makes an action fail; req-error
// (muted) for another failed request (a favicon's 404, a tracker's
// pixel); req-pending for one whose outcome is unknown.
func reqClass(r events.Request) string {
	switch {
	case r.Unconfirmed():
		return "req-pending"
	case r.Failed() && (r.Write() || r.Type == "Document" || r.Navigation):
		return "req-failed"
	case r.Failed():
		return "req-error"
	}
	return ""
}

// Render writes the HTML report of d.
func Render(w io.Writer, d *Data) error {
	return page().Execute(w, d)
}

// WriteFile renders the trace at tracePath into an HTML file at out.
func WriteFile(tracePath, out string) error {
	d, err := Load(tracePath)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := Render(&b, d); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return os.WriteFile(out, b.Bytes(), 0o644)
}
