package agent

import (
	"errors"
	"path/filepath"
	"testing"
)

// Windows device names are refused on every system, so the agent's folder
// means the same when copied to Windows.
func TestFileSystemWindowsNames(t *testing.T) {
	fs, err := NewFileSystem(filepath.Join(t.TempDir(), "files"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"con.md", "CON.txt", "nul.json", "Aux.csv", "prn.md", "com1.md", "LPT9.txt", "com0.md"} {
		if err := fs.Write(bad, "x", false); !errors.Is(err, ErrFileName) {
			t.Errorf("%q accepted: %v", bad, err)
		}
	}
	for _, good := range []string{"console.md", "com10.md", "nul_notes.txt", "config.json"} {
		if err := fs.Write(good, "x", false); err != nil {
			t.Errorf("%q refused: %v", good, err)
		}
	}
}

// upload_file takes the caller's path and the agent's files as the system
// spells them, and uploads the path the caller listed.
func TestUploadPathMatching(t *testing.T) {
	fs, err := NewFileSystem(filepath.Join(t.TempDir(), "files"))
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Write("cv.txt", "Ada", false); err != nil {
		t.Fatal(err)
	}
	listed := filepath.Join(t.TempDir(), "docs", "letter.pdf")
	ac := &ActionContext{FileSystem: fs, agent: &Agent{set: Settings{AvailableFilePaths: []string{listed}}}}
	agentFile := filepath.Join(fs.Dir(), "cv.txt")
	for in, want := range map[string]string{
		listed: listed,
		filepath.Join(filepath.Dir(listed), ".", "letter.pdf"):       listed,
		filepath.Join(filepath.Dir(listed), "x", "..", "letter.pdf"): listed,
		"cv.txt":  agentFile,
		agentFile: agentFile,
		filepath.Join(fs.Dir(), "sub", "..", "cv.txt"): agentFile,
	} {
		if got, err := ac.uploadPath(in); err != nil || got != want {
			t.Errorf("uploadPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"/etc/passwd", "letter.pdf", filepath.Join(filepath.Dir(listed), "other.pdf"), filepath.Join(t.TempDir(), "cv.txt")} {
		if got, err := ac.uploadPath(bad); err == nil {
			t.Errorf("uploadPath(%q) = %q, allowed", bad, got)
		}
	}
}
