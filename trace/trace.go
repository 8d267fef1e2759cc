// Package trace writes and verifies the audit trace: a JSONL file with one
// record per line — every bus lifecycle record, every model call, every
// agent step and action — in which each record carries the SHA-256 of the
// previous line's hash and its own. Removing, reordering or editing a line
// breaks the chain, and a trace whose closing record is missing says so, so
// an auditor can tell a complete trace from a doctored one.
//
// Secrets registered with [WithSecrets] are replaced by "<secret:NAME>"
// before a record is hashed and written; they never reach the file.
package trace

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
)

// Record types written by this package and by the agent.
const (
	TypeOpen  = "open"  // first record: format version and metadata
	TypeBus   = "bus"   // a bus lifecycle record
	TypeModel = "model" // a model call: size, tokens, latency
	TypeStep  = "step"  // an agent step: goal, actions, verdicts
	TypeRun   = "run"   // the run result
	TypeClose = "close" // last record: how many records came before
)

// FormatVersion is written in the open record.
const FormatVersion = 1

// Record is one line of a trace.
type Record struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	Type string    `json:"type"`

	// Bus records.
	Bus      string `json:"bus,omitempty"`
	Phase    string `json:"phase,omitempty"`
	EventID  uint64 `json:"event_id,omitempty"`
	ParentID uint64 `json:"parent_id,omitempty"`
	Kind     string `json:"kind,omitempty"`
	Handler  string `json:"handler,omitempty"`
	// DurationMS is the handler's run time, or the event's since dispatch.
	DurationMS float64 `json:"duration_ms,omitempty"`
	Summary    string  `json:"summary,omitempty"`
	Error      string  `json:"error,omitempty"`

	// Data is the payload of non-bus records (and of bus results small
	// enough to keep whole).
	Data json.RawMessage `json:"data,omitempty"`

	// Prev is the previous record's Hash ("" for the first); Hash is the
	// hex SHA-256 of Prev and this record encoded with Hash empty.
	Prev string `json:"prev"`
	Hash string `json:"hash"`
}

// Option configures a Writer.
type Option func(*Writer)

// WithSecrets registers values that must never be written: each occurrence
// is replaced by "<secret:NAME>". Keys are the names shown instead.
func WithSecrets(secrets map[string]string) Option {
	return func(w *Writer) {
		for name, v := range secrets {
			if v != "" {
				w.secrets = append(w.secrets, secret{name: name, value: v})
			}
		}
		// Longest first, so a secret containing another is replaced whole.
		sort.Slice(w.secrets, func(i, j int) bool { return len(w.secrets[i].value) > len(w.secrets[j].value) })
	}
}

// WithMaxData caps the bytes of a bus result kept as Data (default 4096);
// larger results keep only their summary.
func WithMaxData(n int) Option { return func(w *Writer) { w.maxData = n } }

// WithMetadata adds fields to the open record (tool version, task, model).
func WithMetadata(md map[string]any) Option { return func(w *Writer) { w.meta = md } }

type secret struct{ name, value string }

// Writer appends records to a trace. Its methods are safe for concurrent
// use; records are written in the order the calls take its lock.
type Writer struct {
	mu      sync.Mutex
	f       io.Closer
	w       *bufio.Writer
	seq     uint64
	prev    string
	err     error
	closed  bool
	secrets []secret
	maxData int
	meta    map[string]any
	obs     []*bus.Observation
}

// Create creates (or truncates) the trace file at path and writes the open
// record.
func Create(path string, opts ...Option) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	w, err := NewWriter(f, opts...)
	if err != nil {
		f.Close()
		return nil, err
	}
	w.f = f
	return w, nil
}

// NewWriter writes a trace to out and writes the open record. Close does
// not close out unless it came from Create.
func NewWriter(out io.Writer, opts ...Option) (*Writer, error) {
	w := &Writer{w: bufio.NewWriter(out), maxData: 4096}
	for _, o := range opts {
		o(w)
	}
	open := map[string]any{"format": FormatVersion}
	for k, v := range w.meta {
		open[k] = v
	}
	if err := w.Write(TypeOpen, open); err != nil {
		return nil, err
	}
	return w, nil
}

// ErrClosed is returned by writes after Close.
var ErrClosed = errors.New("trace: writer closed")

// Write appends a record of the given type with data encoded as JSON.
func (w *Writer) Write(typ string, data any) error {
	r := Record{Type: typ}
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			return fmt.Errorf("trace: encoding %s record: %w", typ, err)
		}
		r.Data = b
	}
	return w.append(r)
}

// append stamps, redacts, chains and writes one record.
func (w *Writer) append(r Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	w.seq++
	r.Seq = w.seq
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	r.Time = r.Time.UTC()
	r.Prev, r.Hash = w.prev, ""
	line, err := json.Marshal(r)
	if err != nil {
		w.err = fmt.Errorf("trace: encoding record: %w", err)
		return w.err
	}
	line = w.redact(line)
	// Re-decode the redacted line so the hash covers exactly what is written.
	if err := json.Unmarshal(line, &r); err != nil {
		w.err = fmt.Errorf("trace: redacted record does not decode: %w", err)
		return w.err
	}
	canon, err := json.Marshal(r) // the form Verify re-encodes
	if err != nil {
		w.err = err
		return err
	}
	r.Hash = hashRecord(canon)
	out, err := json.Marshal(r)
	if err != nil {
		w.err = err
		return err
	}
	if _, err := w.w.Write(append(out, '\n')); err != nil {
		w.err = fmt.Errorf("trace: %w", err)
		return w.err
	}
	w.prev = r.Hash
	return nil
}

// redact replaces secret values in the JSON text of a record. Values are
// matched in their JSON-escaped form, which is how they appear in the line.
func (w *Writer) redact(line []byte) []byte {
	if len(w.secrets) == 0 {
		return line
	}
	s := string(line)
	for _, sec := range w.secrets {
		esc, _ := json.Marshal(sec.value)
		needle := string(esc[1 : len(esc)-1])
		if needle != "" {
			s = strings.ReplaceAll(s, needle, "<secret:"+sec.name+">")
		}
	}
	return []byte(s)
}

// hashRecord hashes the canonical line (Hash empty).
func hashRecord(line []byte) string {
	sum := sha256.Sum256(line)
	return hex.EncodeToString(sum[:])
}

// Head returns the hash of the last record written: publishing it lets an
// auditor detect a trace truncated after the fact.
func (w *Writer) Head() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.prev
}

// ObserveBus writes every lifecycle record of b to the trace, off the bus's
// hot path (see bus.Observe for the overflow policy: a record dropped by a
// full buffer is counted, and the count is written in the close record).
func (w *Writer) ObserveBus(b *bus.Bus) {
	o := b.Observe(bus.ObserverFunc(func(r bus.Record) { w.writeBus(r) }), bus.WithBuffer(16384))
	w.mu.Lock()
	w.obs = append(w.obs, o)
	w.mu.Unlock()
}

// keepEvent are the kinds whose event is written whole (Data, within
// WithMaxData) though it has a Summary, which otherwise stands in for it:
// records an auditor reads field by field. A refused request's resource
// type, initiator, tab and layer are the evidence of what the URL policy
// did; its fields are short and hold no typed text.
var keepEvent = map[string]bool{
	events.RequestBlocked.Name: true,
}

func (w *Writer) writeBus(br bus.Record) {
	r := Record{
		Type: TypeBus, Time: br.Time, Bus: br.Bus, Phase: br.Phase.String(),
		EventID: br.EventID, ParentID: br.ParentID, Kind: br.Kind, Handler: br.Handler,
		DurationMS: float64(br.Duration) / float64(time.Millisecond),
	}
	if br.Err != nil {
		r.Error = br.Err.Error()
	}
	switch br.Phase {
	case bus.Dispatched, bus.HandlerFinished, bus.HandlerLate:
		r.Summary = br.Summary(300)
		v := br.Value
		if br.Phase == bus.Dispatched {
			v = br.Event
		}
		// A failed handler's value is kept too: it is the evidence of the
		// failure (an action's verdict, before and after).
		_, summarized := v.(bus.Summarizer)
		if br.Phase == bus.Dispatched && keepEvent[br.Kind] {
			summarized = false
		}
		if !summarized && v != nil && !(br.Err != nil && reflect.ValueOf(v).IsZero()) {
			if b, err := json.Marshal(v); err == nil && len(b) <= w.maxData {
				r.Data = b
			}
		}
	}
	_ = w.append(r)
}

// Close stops the bus observers (after they delivered what they buffered),
// writes the close record and flushes. The chain's head hash is in it.
func (w *Writer) Close() error {
	w.mu.Lock()
	obs := w.obs
	w.obs = nil
	w.mu.Unlock()
	var dropped uint64
	for _, o := range obs {
		o.Stop()
		<-o.Done()
		dropped += o.Dropped()
	}
	err := w.Write(TypeClose, map[string]any{"records": w.seqNow(), "dropped_bus_records": dropped})
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if ferr := w.w.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("trace: %w", ferr)
	}
	if w.f != nil {
		if cerr := w.f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("trace: %w", cerr)
		}
	}
	return err
}

func (w *Writer) seqNow() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seq
}
