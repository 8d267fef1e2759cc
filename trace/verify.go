package trace

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrTampered is matched by every *TamperError.
var ErrTampered = errors.New("trace: chain broken")

// TamperError names the first line at which a trace fails verification.
type TamperError struct {
	Line   int // 1-based
	Reason string
}

func (e *TamperError) Error() string {
	return fmt.Sprintf("trace: line %d: %s", e.Line, e.Reason)
}

// Unwrap makes errors.Is(err, ErrTampered) hold.
func (e *TamperError) Unwrap() error { return ErrTampered }

// Report is what Verify found.
type Report struct {
	Records int
	// Closed is true when the trace ends with its close record and that
	// record counts every record before it; false means the trace may have
	// been cut short (or the writer never closed, e.g. a crash).
	Closed bool
	// Head is the last record's hash; compare it with a published head.
	Head string
}

// VerifyFile verifies the trace at path.
func VerifyFile(path string) (Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return Report{}, fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	return Verify(f)
}

// Verify checks every line: sequence numbers count up from 1, each Prev is
// the previous Hash, and each Hash is the SHA-256 of the line with Hash
// empty. A removed, inserted, reordered or edited line fails with a
// *TamperError naming the first bad line.
func Verify(r io.Reader) (Report, error) {
	var rep Report
	err := scan(r, func(line int, raw []byte, rec Record) error {
		if rec.Seq != uint64(line) {
			return &TamperError{Line: line, Reason: fmt.Sprintf("sequence %d where %d was expected (a record was removed or inserted)", rec.Seq, line)}
		}
		if rec.Prev != rep.Head {
			return &TamperError{Line: line, Reason: "previous-hash link does not match the line before"}
		}
		want := rec.Hash
		rec.Hash = ""
		canon, err := json.Marshal(rec)
		if err != nil {
			return &TamperError{Line: line, Reason: "record does not re-encode: " + err.Error()}
		}
		if got := hashRecord(canon); got != want {
			return &TamperError{Line: line, Reason: "content does not match its hash (the record was edited)"}
		}
		rep.Records = line
		rep.Head = want
		rep.Closed = false
		if rec.Type == TypeClose {
			var c struct {
				Records uint64 `json:"records"`
			}
			if json.Unmarshal(rec.Data, &c) == nil && c.Records == rec.Seq-1 {
				rep.Closed = true
			}
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	if rep.Records == 0 {
		return rep, &TamperError{Line: 1, Reason: "empty trace"}
	}
	return rep, nil
}

// ReadFile reads every record of a trace without verifying it.
func ReadFile(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	var out []Record
	err = scan(f, func(_ int, _ []byte, rec Record) error {
		out = append(out, rec)
		return nil
	})
	return out, err
}

func scan(r io.Reader, fn func(line int, raw []byte, rec Record) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		raw := sc.Bytes()
		var rec Record
		if err := json.Unmarshal(raw, &rec); err != nil {
			return &TamperError{Line: line, Reason: "not a JSON record: " + err.Error()}
		}
		if err := fn(line, raw, rec); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("trace: reading: %w", err)
	}
	return nil
}
