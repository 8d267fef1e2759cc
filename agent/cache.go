package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/browseragent/browseragent/agent/match"
	"github.com/browseragent/browseragent/events"
)

// The action cache (Settings.Cache): a model step's actions, stored under
// the page they were chosen on, answer the same step of a later run
// without a model call. See docs/replay.md, "Action cache".

// Errors of an ActionCache. The agent never fails a run on them: a cache
// that cannot answer is a miss, logged.
var (
	// ErrCacheMiss: Get found no entry under the key.
	ErrCacheMiss = errors.New("agent: action cache: no entry")
	// ErrCacheCorrupt is wrapped by Get's error for an entry that cannot be
	// read back (bad JSON, another key's entry, too large, another
	// format); the next Put under the key replaces it.
	ErrCacheCorrupt = errors.New("agent: action cache: corrupt entry")
	// ErrCacheEntryTooLarge is wrapped by Put's error for an entry over the
	// cache's size bound; nothing is written.
	ErrCacheEntryTooLarge = errors.New("agent: action cache: entry too large")
)

// CacheFormat is the version of CacheEntry's layout; an entry of another
// format is a corrupt one (a miss, replaced on the next Put).
const CacheFormat = 1

// DefaultCacheEntryMaxBytes bounds one DirCache entry's file.
const DefaultCacheEntryMaxBytes = 256 << 10

// ActionCache stores the actions of model steps under a key the agent
// computes (CacheKey). Implementations must be safe for concurrent use by
// several agents. Errors are reported to the agent, which logs them and
// treats the step as a miss: a broken cache never fails a run.
type ActionCache interface {
	// Get returns the entry stored under key, or an error wrapping
	// ErrCacheMiss when there is none (a nil entry counts as none). The
	// step's context bounds it.
	Get(ctx context.Context, key string) (*CacheEntry, error)
	// Put stores e under key, replacing any entry there.
	Put(ctx context.Context, key string, e *CacheEntry) error
}

// CacheEntry is one cached step: the actions a model chose on a page, and
// what they came from.
type CacheEntry struct {
	// Format is CacheFormat.
	Format int `json:"format"`
	// Key is the key the entry was stored under (a file named for another
	// key is corrupt).
	Key string `json:"key"`
	// Model is the model's name (llm.Model.Name) and PromptVersion the
	// digest of what decides its answers (see CacheKey); an entry whose
	// model or prompt version is not the run's is not used (counted in
	// CacheStats.Invalidated) and is overwritten by the next Put.
	Model         string `json:"model"`
	PromptVersion string `json:"prompt_version"`
	// Page is the fingerprint of the page the actions were chosen on, for a
	// reader of the file (the key holds it).
	Page string `json:"page,omitempty"`
	// Created is when the entry was stored.
	Created time.Time `json:"created"`
	// The model's reply, as the next steps' history shows it (thinking is
	// not kept).
	EvaluationPreviousGoal string `json:"evaluation_previous_goal,omitempty"`
	Memory                 string `json:"memory,omitempty"`
	NextGoal               string `json:"next_goal,omitempty"`
	// PlanUpdate and CurrentPlanItem are the model's plan changes of the
	// step (AgentOutput's; planning only), applied again on a hit so that
	// the model's next step sees the plan it would have had. A nil
	// PlanUpdate changes nothing, an empty one clears the plan.
	PlanUpdate      []string `json:"plan_update"`
	CurrentPlanItem *int     `json:"current_plan_item,omitempty"`
	// Actions are the step's actions, in order.
	Actions []CachedAction `json:"actions"`
}

// CachedAction is one action of a cached step. Params keep <secret>
// placeholders, never a secret's value; an element action's "index" is
// the recorded run's and is replaced, on a hit, by the index of the
// element Element identifies on the new page (agent/match).
type CachedAction struct {
	Name    string          `json:"name"`
	Params  json.RawMessage `json:"params,omitempty"`
	Element *match.Element  `json:"element,omitempty"`
}

// DirCache is an ActionCache in a directory: one JSON file per entry,
// named for the SHA-256 of its key. Writes go to a temporary file renamed
// into place, so several agents and processes may share the directory: a
// reader sees a whole entry or none, and the last writer wins. Files are
// created 0600 (an entry holds what the run typed, secrets excepted).
// Whoever can write the directory decides what a later run does, so on
// Unix NewDirCache refuses a directory another user owns or that group
// or others may write (as ssh does with ~/.ssh); Windows has no such
// check.
type DirCache struct {
	dir string
	// MaxEntryBytes bounds an entry's file: Put refuses a larger entry
	// (ErrCacheEntryTooLarge) and Get reads a larger file as corrupt.
	// Default (0) DefaultCacheEntryMaxBytes. Set it before the cache's
	// first use (it is read without a lock).
	MaxEntryBytes int64
}

// Defaults of DirCacheOptions.
const (
	DefaultCacheMaxEntries = 10000
	DefaultCacheMaxAge     = 90 * 24 * time.Hour
)

// DirCacheOptions bound a DirCache's directory; NewDirCache prunes it to
// them once, when it opens it.
type DirCacheOptions struct {
	// MaxEntries keeps the newest entries (by modification time) and
	// deletes the rest. Default (0) DefaultCacheMaxEntries; negative: no
	// bound.
	MaxEntries int
	// MaxAge deletes entries not written for longer. Default (0)
	// DefaultCacheMaxAge; negative: no bound.
	MaxAge time.Duration
}

// tmpMaxAge is the age past which a temporary file is an orphan (a Put
// that died between its write and its rename).
const tmpMaxAge = time.Hour

// NewDirCache returns a cache in dir, creating the directory (0700) if
// needed, and prunes it (DirCacheOptions; at most one opts is used; none:
// the defaults). A directory that is not one, or on Unix is another
// user's or writable by group or others, is an ErrSettings.
func NewDirCache(dir string, opts ...DirCacheOptions) (*DirCache, error) {
	if strings.TrimSpace(dir) == "" {
		return nil, fmt.Errorf("%w: the action cache needs a directory", ErrSettings)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("agent: action cache: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("agent: action cache: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: action cache %s is not a directory", ErrSettings, dir)
	}
	if err := checkCacheDir(dir, fi); err != nil {
		return nil, err
	}
	var o DirCacheOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if err := pruneCacheDir(dir, o, time.Now()); err != nil {
		return nil, fmt.Errorf("agent: action cache: %w", err)
	}
	return &DirCache{dir: dir}, nil
}

// pruneCacheDir deletes orphaned temporary files and the entries over
// o's bounds. A file gone meanwhile (another process pruning) is no error.
func pruneCacheDir(dir string, o DirCacheOptions, now time.Time) error {
	maxN, maxAge := o.MaxEntries, o.MaxAge
	if maxN == 0 {
		maxN = DefaultCacheMaxEntries
	}
	if maxAge == 0 {
		maxAge = DefaultCacheMaxAge
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	type entry struct {
		path string
		mod  time.Time
	}
	var keep []entry
	// Best effort: a file another process removed or cannot be removed
	// now is tried again on the next open.
	remove := func(p string) { _ = os.Remove(p) }
	for _, de := range des {
		name := de.Name()
		tmp := strings.HasPrefix(name, ".entry-") && strings.HasSuffix(name, ".tmp")
		if !de.Type().IsRegular() || (!tmp && filepath.Ext(name) != ".json") {
			continue
		}
		fi, err := de.Info()
		if err != nil {
			continue
		}
		p := filepath.Join(dir, name)
		switch age := now.Sub(fi.ModTime()); {
		case tmp:
			if age > tmpMaxAge {
				remove(p)
			}
		case maxAge > 0 && age > maxAge:
			remove(p)
		default:
			keep = append(keep, entry{p, fi.ModTime()})
		}
	}
	if maxN > 0 && len(keep) > maxN {
		sort.Slice(keep, func(i, j int) bool { return keep[i].mod.After(keep[j].mod) })
		for _, e := range keep[maxN:] {
			remove(e.path)
		}
	}
	return nil
}

// Dir returns the cache's directory.
func (c *DirCache) Dir() string { return c.dir }

func (c *DirCache) maxBytes() int64 {
	if c.MaxEntryBytes > 0 {
		return c.MaxEntryBytes
	}
	return DefaultCacheEntryMaxBytes
}

// path is key's file: the key is hashed, so any key is a safe file name.
func (c *DirCache) path(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(c.dir, hex.EncodeToString(sum[:16])+".json")
}

// Get implements ActionCache.
func (c *DirCache) Get(ctx context.Context, key string) (*CacheEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(c.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrCacheMiss
	}
	if err != nil {
		return nil, fmt.Errorf("agent: action cache: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, c.maxBytes()+1))
	if err != nil {
		return nil, fmt.Errorf("agent: action cache: %w", err)
	}
	if int64(len(b)) > c.maxBytes() {
		return nil, fmt.Errorf("%w: over %d bytes", ErrCacheCorrupt, c.maxBytes())
	}
	var e CacheEntry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCacheCorrupt, err)
	}
	switch {
	case e.Format != CacheFormat:
		return nil, fmt.Errorf("%w: format %d, want %d", ErrCacheCorrupt, e.Format, CacheFormat)
	case e.Key != key:
		return nil, fmt.Errorf("%w: the file holds another key's entry", ErrCacheCorrupt)
	}
	return &e, nil
}

// Put implements ActionCache.
func (c *DirCache) Put(ctx context.Context, key string, e *CacheEntry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if e == nil {
		return errors.New("agent: action cache: nil entry")
	}
	cp := *e
	cp.Format, cp.Key = CacheFormat, key
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // placeholders stay readable: <secret>name</secret>
	enc.SetIndent("", "  ")
	if err := enc.Encode(&cp); err != nil {
		return fmt.Errorf("agent: action cache: %w", err)
	}
	b := buf.Bytes()
	if int64(len(b)) > c.maxBytes() {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrCacheEntryTooLarge, len(b), c.maxBytes())
	}
	tmp, err := os.CreateTemp(c.dir, ".entry-*.tmp")
	if err != nil {
		return fmt.Errorf("agent: action cache: %w", err)
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("agent: action cache: %w", err)
	}
	// Rename is atomic: a concurrent Get reads the old entry or this one.
	if err := os.Rename(tmp.Name(), c.path(key)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("agent: action cache: %w", err)
	}
	return nil
}

// cacheableActions are the built-in actions a cached step may hold: each
// acts on the page, and what it does is decided by its parameters and its
// element alone. Left out, so that a step holding one is never stored:
//   - done: its answer comes from page content the fingerprint does not
//     cover (and it would end a later run on a stale answer);
//   - extract, dropdown_options, read_value, search_page, find_elements, screenshot,
//     evaluate, read_file: they read something for the model, which a
//     skipped model call would never read (evaluate also runs script);
//   - write_file, replace_file, save_as_pdf: their content comes from what
//     the model read before, or is a file of the page as it is now;
//   - request_human: a person's help is not repeatable;
//   - wait: a page that was still loading is timing, not the task's
//     progress (waits are left out of the key, so a cached wait would
//     answer its own next step again and again);
//   - switch_tab, close_tab: tab ids belong to one browser;
//   - any action not built in (or replaced by the caller's own under a
//     built-in name): what it reads or does is unknown.
//
// A click on coordinates is left out too: a point depends on the layout.
var cacheableActions = map[string]bool{
	"navigate": true, "search": true, "go_back": true,
	"click": true, "input": true, "upload_file": true, "scroll": true,
	"send_keys": true, "find_text": true, "select_dropdown": true, "hover": true,
}

// cacheable reports whether action c may be stored in or run from the cache.
func (a *Agent) cacheable(c ActionCall) (ActionSpec, bool) {
	if !cacheableActions[c.Name] {
		return ActionSpec{}, false
	}
	spec, ok := a.spec(c.Name)
	if !ok {
		return ActionSpec{}, false
	}
	if _, alt := a.alts[c.Name]; !spec.builtin && !alt {
		return ActionSpec{}, false
	}
	if hasCoordinates(c.Params) {
		return ActionSpec{}, false
	}
	return spec, true
}

// cacheSource is the action cache as a step source (source.go). It is
// owned by the Run goroutine.
type cacheSource struct {
	a     *Agent
	c     ActionCache
	stats *CacheStats // this Run's, in Result.Cache
	// The step that asked the cache (step < 0: none yet): its key and
	// prompt version for the Put after a miss, the matches of a hit.
	step    int
	key     string
	version string
	hit     bool
	matches []*match.Result
	// seen are the keys this Run looked up so far. The same key seen again
	// means only waits ran in between (the key leaves them out): the page
	// was not ready at the first look, and a step stored under the key
	// would be taken, on the next run, at a first look that may come
	// before the page is ready. Such a step is not stored.
	seen map[string]bool
}

func newCacheSource(a *Agent, c ActionCache) *cacheSource {
	return &cacheSource{a: a, c: c, step: -1, stats: &CacheStats{}, seen: map[string]bool{}}
}

// startRun starts this Run's counts and returns them (Result.Cache).
func (s *cacheSource) startRun() *CacheStats {
	s.stats = &CacheStats{}
	s.seen = map[string]bool{}
	return s.stats
}

// cachePutTimeout bounds a Put after the step: it runs even when the
// step's own time ran out.
const cachePutTimeout = 10 * time.Second

// put stores e under the step's key, outside the step's deadline.
func (s *cacheSource) put(ctx context.Context, e *CacheEntry) error {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cachePutTimeout)
	defer cancel()
	return s.c.Put(pctx, s.key, e)
}

// next implements stepSource: a hit answers the step with the cached
// actions, their elements found again on this page.
func (s *cacheSource) next(ctx context.Context, st *events.BrowserState, item *HistoryItem) (*AgentOutput, StepSource, []string, bool, error) {
	s.step, s.hit, s.matches = -1, false, nil
	a := s.a
	// A step that may only call done, or whose model call another source
	// asked for (a heal, with its own nudges), is the model's.
	if a.stepDoneOnly || item.Source != SourceModel || st.Fingerprint == "" {
		return nil, "", nil, false, nil
	}
	s.step, s.key, s.version = item.Step, a.cacheKey(st), a.promptVersion(st.URL)
	log := a.log.With(zap.Int("step", item.Step), zap.String("cache_key", s.key[:16]))
	e, err := s.c.Get(ctx, s.key)
	switch {
	case errors.Is(err, ErrCacheMiss) || (err == nil && e == nil):
		s.stats.Misses++
		return nil, "", nil, false, nil
	case err != nil:
		log.Warn("agent: action cache: lookup failed; asking the model", zap.Error(err))
		s.stats.Misses++
		return nil, "", nil, false, nil
	case e.Model != a.model.Name() || e.PromptVersion != s.version:
		log.Info("agent: action cache: entry from another model or prompt version", zap.String("entry_model", e.Model))
		s.stats.Invalidated++
		s.stats.Misses++
		return nil, "", nil, false, nil
	}
	out, matches, why := a.fromCache(e, st)
	if out == nil {
		log.Info("agent: action cache: entry not usable on this page; asking the model", zap.String("reason", why))
		s.stats.Misses++
		return nil, "", nil, false, nil
	}
	s.stats.Hits++
	s.hit, s.matches = true, matches
	log.Debug("agent: action cache: hit", zap.Int("actions", len(out.Action)))
	return out, SourceCache, nil, true, nil
}

// fromCache turns an entry into the step's output for the page in st:
// every action must be cacheable, offered here and valid, and every
// element action's element found uniquely (an ambiguous match is a miss).
// It returns nil and the reason when the entry cannot be used.
func (a *Agent) fromCache(e *CacheEntry, st *events.BrowserState) (*AgentOutput, []*match.Result, string) {
	if len(e.Actions) == 0 {
		return nil, nil, "no actions (dropped after a cached action failed)"
	}
	offered := map[string]bool{}
	for _, sp := range a.offered(st.URL, false) {
		offered[sp.Name] = true
	}
	out := &AgentOutput{EvaluationPreviousGoal: e.EvaluationPreviousGoal, Memory: e.Memory, NextGoal: e.NextGoal,
		PlanUpdate: slices.Clone(e.PlanUpdate), CurrentPlanItem: e.CurrentPlanItem}
	if e.PlanUpdate != nil && out.PlanUpdate == nil {
		out.PlanUpdate = []string{} // clears the plan, as the model's did
	}
	tasks := a.taskList()
	matches := make([]*match.Result, len(e.Actions))
	for i, ca := range e.Actions {
		c := ActionCall{Name: ca.Name, Params: ca.Params}
		spec, ok := a.cacheable(c)
		if !ok || !offered[c.Name] {
			return nil, nil, fmt.Sprintf("action %d (%s) is not offered or not cacheable", i+1, c.Name)
		}
		// The same rules as when it was stored, against this run: another
		// run's URLs (a test server's port) or files are not this one's.
		if why := a.typedOrigin(c, st, tasks); why != "" {
			return nil, nil, fmt.Sprintf("action %d (%s): %s", i+1, c.Name, why)
		}
		if why := a.usableHere(c, st.URL); why != "" {
			return nil, nil, fmt.Sprintf("action %d (%s): %s", i+1, c.Name, why)
		}
		if ca.Element != nil {
			if !spec.TargetsIndex {
				return nil, nil, fmt.Sprintf("action %d (%s) names an element but takes none", i+1, c.Name)
			}
			r := match.Find(*ca.Element, st.Elements)
			if !r.Found() || !r.Unique || r.Ambiguous {
				return nil, nil, fmt.Sprintf("action %d (%s): its element was not found uniquely (%d candidates)", i+1, c.Name, len(r.Candidates))
			}
			p, err := withIndex(c.Params, r.Index)
			if err != nil {
				return nil, nil, fmt.Sprintf("action %d (%s): %v", i+1, c.Name, err)
			}
			c.Params = p
			matches[i] = &r
		}
		// The Approver hears that no model chose this action now.
		c.approval = &approvalNote{match: matches[i], note: "from the action cache: a model chose this action in an earlier run on this page; no model call now"}
		if ca.Element != nil {
			c.approval.note += fmt.Sprintf("; its element was found again by %s", matches[i].Strategy)
		} else if spec.TargetsIndex && paramIndex(c.Params) > 0 {
			return nil, nil, fmt.Sprintf("action %d (%s) has an index but no recorded element", i+1, c.Name)
		}
		if err := ValidateJSON(spec.Params, orEmpty(c.Params)); err != nil {
			return nil, nil, fmt.Sprintf("action %d (%s): %v", i+1, c.Name, err)
		}
		out.Action = append(out.Action, c)
	}
	return out, matches, ""
}

// withIndex returns params with "index" set to idx, the other keys kept.
func withIndex(params json.RawMessage, idx int) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(params)) > 0 {
		if err := json.Unmarshal(params, &m); err != nil {
			return nil, fmt.Errorf("params: %w", err)
		}
	}
	m["index"] = json.RawMessage(fmt.Sprint(idx))
	return json.Marshal(m)
}

// stepped implements stepSource: a hit's records get their matches (and
// an entry whose action failed is emptied); a model step the cache missed
// is stored when every action ran.
func (s *cacheSource) stepped(ctx context.Context, st *events.BrowserState, out *AgentOutput, item *HistoryItem) error {
	if s.step < 0 || item.Step != s.step {
		return nil // the cache was not asked on this step
	}
	seenBefore := s.seen[s.key]
	s.seen[s.key] = true
	if s.hit {
		failed := false
		for i := range item.Actions {
			if i < len(s.matches) {
				item.Actions[i].Match = s.matches[i]
			}
			failed = failed || (item.Actions[i].Error != "" && !item.Actions[i].Denied && !contextError(item.Actions[i].Error))
		}
		// A step that ran out of time says nothing of the entry (a busy
		// machine); only an action the page refused does.
		if failed && ctx.Err() == nil {
			// A cached action that fails here would fail again on every
			// run: the entry is emptied (a miss from now on) until a model
			// step under the key replaces it.
			e := &CacheEntry{Model: s.a.model.Name(), PromptVersion: s.version, Page: s.a.cachePageOf(st), Created: s.a.set.Now()}
			if err := s.put(ctx, e); err != nil {
				s.a.log.Warn("agent: action cache: could not drop a failing entry", zap.Int("step", item.Step), zap.Error(err))
			} else {
				s.a.log.Info("agent: action cache: a cached action failed; entry dropped", zap.Int("step", item.Step))
			}
		}
		return nil
	}
	e, why := s.a.toCache(out, item, st)
	if e != nil && seenBefore {
		e, why = nil, "key ambiguous within the run (the page was looked at before, with only waits since)"
	}
	if e == nil {
		if why != "" {
			s.a.log.Debug("agent: action cache: step not stored", zap.Int("step", item.Step), zap.String("reason", why))
		}
		return nil
	}
	e.Model, e.PromptVersion, e.Page, e.Created = s.a.model.Name(), s.version, s.a.cachePageOf(st), s.a.set.Now()
	if err := s.put(ctx, e); err != nil {
		s.a.log.Warn("agent: action cache: could not store the step", zap.Int("step", item.Step), zap.Error(err))
		return nil
	}
	s.stats.Stored++
	return nil
}

// contextError reports whether an action's error is its context's end (a
// step timeout, a cancelled run) rather than the page's answer.
func contextError(msg string) bool {
	return strings.Contains(msg, context.DeadlineExceeded.Error()) || strings.Contains(msg, context.Canceled.Error())
}

// cachePageOf is CacheEntry.Page for st: the key's page part, scrubbed of
// secrets and without the URL's query (a token in it stays out of the
// file).
func (a *Agent) cachePageOf(st *events.BrowserState) string {
	p := a.secrets.scrub(a.cacheURLs(cachePage(st.Fingerprint)))
	if i := strings.IndexByte(p, '?'); i >= 0 {
		if j := strings.LastIndex(p, "#e"); j > i {
			return p[:i] + p[j:]
		}
		return p[:i]
	}
	return p
}

// taskList is a copy of the run's tasks.
func (a *Agent) taskList() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.tasks)
}

// toCache is the entry for a model step, or nil and why it is not stored:
// a step is stored only when the model chose it, none of its actions was
// dropped, failed, denied or stopped by a fence, every action is
// cacheable with its element recorded, and what it typed or navigated to
// came from the task (typedOrigin), not from the page.
func (a *Agent) toCache(out *AgentOutput, item *HistoryItem, st *events.BrowserState) (*CacheEntry, string) {
	switch {
	case item.Source != SourceModel || out == nil || item.Output != out:
		return nil, "not a model step"
	case item.Error != "":
		return nil, "the step failed"
	case len(out.Dropped) > 0:
		return nil, "actions were dropped"
	case len(item.Actions) != len(out.Action):
		return nil, "the batch stopped early"
	}
	e := &CacheEntry{
		EvaluationPreviousGoal: a.secrets.scrub(out.EvaluationPreviousGoal),
		Memory:                 a.secrets.scrub(out.Memory),
		NextGoal:               a.secrets.scrub(out.NextGoal),
		PlanUpdate:             slices.Clone(out.PlanUpdate),
		CurrentPlanItem:        out.CurrentPlanItem,
	}
	for i := range e.PlanUpdate {
		e.PlanUpdate[i] = a.secrets.scrub(e.PlanUpdate[i])
	}
	tasks := a.taskList()
	for i, c := range out.Action {
		rec := item.Actions[i]
		if rec.Error != "" || rec.Denied {
			return nil, fmt.Sprintf("action %d (%s) failed", i+1, c.Name)
		}
		spec, ok := a.cacheable(c)
		if !ok || rec.Result.ReadOnce != "" || rec.Result.WantScreenshot {
			return nil, fmt.Sprintf("action %d (%s) is not cacheable", i+1, c.Name)
		}
		if spec.TargetsIndex && paramIndex(c.Params) > 0 && rec.Element == nil {
			return nil, fmt.Sprintf("action %d (%s): its element was not recorded", i+1, c.Name)
		}
		if why := a.typedOrigin(c, st, tasks); why != "" {
			return nil, fmt.Sprintf("action %d (%s): %s", i+1, c.Name, why)
		}
		params, err := a.scrubParams(c.Params)
		if err != nil {
			return nil, fmt.Sprintf("action %d (%s): %v", i+1, c.Name, err)
		}
		ca := CachedAction{Name: c.Name, Params: params}
		if rec.Element != nil {
			el := *rec.Element
			ca.Element = &el
		}
		e.Actions = append(e.Actions, ca)
	}
	return e, ""
}

// scrubParams re-encodes params with every string scrubbed of secrets
// (placeholders kept, never a value) and without HTML escapes, so that a
// placeholder reads as <secret>name</secret> in the file.
func (a *Agent) scrubParams(params json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(params)) == 0 {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(params, &v); err != nil {
		return nil, fmt.Errorf("params: %w", err)
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return a.secrets.scrub(x)
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(walk(v)); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimSpace(buf.Bytes())), nil
}

// cacheKeyPrefix versions the key's layout.
const cacheKeyPrefix = "browseragent action cache v1\n"

// cacheKey is the key of the step about to be decided on the page in st:
// the hex SHA-256 of
//
//	"browseragent action cache v1\n"
//	"task\n" + each task of the run (the first and follow-ups), each
//	         followed by "\n\x00"
//	"page\n" + the page's URL + "#e" + its element count + "\n" (the
//	         fingerprint, URL#m<mutations>/e<elements>, without its
//	         mutation count)
//	"progress\n" + one line per action the run ran so far, step 0
//	         included, in order, waits left out (progressLine)
//
// Every URL in the tasks, the page and the progress goes through
// Settings.CacheURL (NormalizeCacheURL by default: a loopback port or a
// session id does not change the key).
//
// The mutation count is left out: it counts from the document's load,
// and how much of the parsing the counter sees varies (the same static
// page read m1, m2 and m3 on three loads in Chromium), so it would make
// the same page miss at random. The page's elements must match anyway.
// The progress tells apart the same page seen at two points of a run (a
// form before and after it was filled). Indexes are left out because
// they differ between runs; a run that did anything differently, so far,
// gets other keys from then on.
func (a *Agent) cacheKey(st *events.BrowserState) string {
	h := sha256.New()
	io.WriteString(h, cacheKeyPrefix)
	io.WriteString(h, "task\n")
	a.mu.Lock()
	tasks := slices.Clone(a.tasks)
	var recs []ActionRecord
	for _, it := range a.history.Items {
		for _, r := range it.Actions {
			if r.Name != "wait" { // how long a page took to load is no progress
				recs = append(recs, r)
			}
		}
	}
	a.mu.Unlock()
	for _, t := range tasks {
		io.WriteString(h, a.cacheURLs(t)+"\n\x00")
	}
	io.WriteString(h, "page\n"+a.cacheURLs(cachePage(st.Fingerprint))+"\n")
	io.WriteString(h, "progress\n")
	for _, r := range recs {
		io.WriteString(h, a.progressLine(r)+"\n")
	}
	return hex.EncodeToString(h.Sum(nil))
}

// cachePage is a fingerprint (URL#m<mutations>/e<elements>) without its
// mutation count: URL#e<elements>. Another form is kept whole.
func cachePage(fp string) string {
	i, j := strings.LastIndex(fp, "#m"), strings.LastIndex(fp, "/e")
	if i < 0 || j < i {
		return fp
	}
	return fp[:i] + "#e" + fp[j+2:]
}

// progressLine is one action of the key's progress, scrubbed of secrets
// (a value the model typed literally never reaches the key, which the
// cache stores in clear). A cacheable action is its name, its parameters
// as canonical JSON with "index" replaced by what the element looked like
// (tag|role|accessible name), and ok or failed. Any other action (extract,
// write_file, a held-back done…) always goes back to the model, which
// words its parameters anew on each run: it is only its name, its
// element if any, and ok or failed, so that a rewording does not change
// every later key.
func (a *Agent) progressLine(r ActionRecord) string {
	status := "ok"
	if r.Error != "" {
		status = "failed"
	}
	elem := ""
	if r.Element != nil {
		elem = r.Element.Tag + "|" + r.Element.Role + "|" + r.Element.Name
	}
	if !cacheableActions[r.Name] {
		return a.secrets.scrub(r.Name + " " + elem + " " + status)
	}
	params := "{}"
	var m map[string]any
	if len(bytes.TrimSpace(r.Params)) > 0 && json.Unmarshal(r.Params, &m) == nil {
		if _, ok := m["index"]; ok && r.Element != nil {
			m["index"] = elem
		}
		// Map keys sorted; no HTML escapes, so that a placeholder from the
		// cache and a literal value scrubbed below read alike.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if enc.Encode(m) == nil {
			params = strings.TrimSpace(buf.String())
		}
	}
	return a.cacheURLs(a.secrets.scrub(r.Name + " " + params + " " + status))
}

// cacheCodeVersion is raised when the agent's way of showing the page to
// the model (serializer, state message) changes what the model would
// answer: entries of another version are invalidated.
const cacheCodeVersion = 1

// promptDigest digests the embedded prompt templates once.
var promptDigest = sync.OnceValue(func() string {
	h := sha256.New()
	names, _ := fs.Glob(promptFS, "prompts/*")
	sort.Strings(names)
	for _, n := range names {
		b, _ := promptFS.ReadFile(n)
		io.WriteString(h, n+"\n")
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
})

// promptVersion digests what decides the model's answers besides the page
// and the task: the prompt templates, the system prompt with its action
// list, the reply schema of the actions offered on url (so the reply mode,
// the planning fields and the action schema form), the output schema and
// the vision mode. An entry of another version is invalidated.
func (a *Agent) promptVersion(url string) string {
	h := sha256.New()
	io.WriteString(h, promptDigest()+"\n")
	text, actions := a.systemPrompt()
	io.WriteString(h, text+"\x00"+actions+"\x00")
	sch := replySchema(a.offered(url, false), a.set.MaxActionsPerStep, a.set.ReplyMode, a.set.planning(), a.set.ActionSchema)
	if sch != nil {
		h.Write(sch.JSON)
	}
	h.Write([]byte{0})
	h.Write(a.outSch)
	io.WriteString(h, "\x00"+string(a.set.Vision))
	// What the prompt shows besides: the files offered, the secrets' names
	// (their values never), how much of the page it lists, the search
	// engine, and this code's way of writing the page for the model.
	files := slices.Clone(a.set.AvailableFilePaths)
	sort.Strings(files)
	fmt.Fprintf(h, "\x00files %q\x00secrets %q\x00elements %d\x00search %s\x00code %d",
		files, a.secrets.names(url), a.set.MaxElementsChars, a.set.SearchEngine, cacheCodeVersion)
	return hex.EncodeToString(h.Sum(nil))[:16]
}
