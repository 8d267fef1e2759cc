package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/browseragent/browseragent/internal/pathcheck"
)

// ErrFileName is wrapped by errors for a file name the FileSystem refuses.
var ErrFileName = errors.New("agent: invalid file name")

// FileExtensions are the extensions the FileSystem accepts.
var FileExtensions = []string{"md", "txt", "json", "jsonl", "csv", "html", "xml"}

var fileNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_\-.]{0,99}$`)

// FileSystem is the agent's scratch area: files kept in memory and mirrored
// to a directory on disk (Dir). Names are plain base names with an allowed
// extension; anything with a path separator, "..", a leading dot or an
// unknown extension is refused with an error the model reads, and so is a
// Windows device name (con.md, NUL.txt) on every system. It is safe
// for concurrent use.
type FileSystem struct {
	dir   string
	mu    sync.Mutex
	files map[string]string
}

// NewFileSystem returns a FileSystem mirrored to dir (created if needed),
// with an empty todo.md.
func NewFileSystem(dir string) (*FileSystem, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("agent: file system: %w", err)
	}
	fs := &FileSystem{dir: dir, files: map[string]string{}}
	if err := fs.Write("todo.md", "", false); err != nil {
		return nil, err
	}
	return fs, nil
}

// Dir returns the directory the files are mirrored to.
func (fs *FileSystem) Dir() string { return fs.dir }

// CleanName checks a file name and returns it as stored.
func CleanName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if err := plainName(name, "use a plain name like notes.md: letters, digits, _ - ."); err != nil {
		return "", err
	}
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(name), "."))
	for _, e := range FileExtensions {
		if ext == e {
			return name, nil
		}
	}
	return "", fmt.Errorf("%w: %q has extension %q; allowed: %s", ErrFileName, name, ext, strings.Join(FileExtensions, ", "))
}

// plainName checks a name for a file the agent writes in its folder: a
// plain base name (no separators, no "..", letters, digits, _ - .) that
// is not a Windows device name — refused on every system, so that the
// folder means the same on Windows. hint words the error.
func plainName(name, hint string) error {
	if name == "" || strings.ContainsAny(name, `/\`) || strings.Contains(name, "..") || !fileNameRE.MatchString(name) {
		return fmt.Errorf("%w: %q (%s)", ErrFileName, name, hint)
	}
	if pathcheck.Reserved(name) {
		return fmt.Errorf("%w: %q is a device name on Windows (CON, NUL, COM1, ...); use another name", ErrFileName, name)
	}
	return nil
}

// Write stores content (appending when append is true) and mirrors it.
func (fs *FileSystem) Write(name, content string, appendTo bool) error {
	n, err := CleanName(name)
	if err != nil {
		return err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if appendTo {
		content = fs.files[n] + content
	}
	if err := os.WriteFile(filepath.Join(fs.dir, n), []byte(content), 0o644); err != nil {
		return fmt.Errorf("agent: write %s: %w", n, err)
	}
	fs.files[n] = content
	return nil
}

// Read returns a file's content.
func (fs *FileSystem) Read(name string) (string, error) {
	n, err := CleanName(name)
	if err != nil {
		return "", err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	c, ok := fs.files[n]
	if !ok {
		return "", fmt.Errorf("agent: file %s does not exist (files: %s)", n, strings.Join(fs.namesLocked(), ", "))
	}
	return c, nil
}

// Replace replaces every occurrence of old with new in a file. Zero
// occurrences is an error.
func (fs *FileSystem) Replace(name, old, new string) (int, error) {
	c, err := fs.Read(name)
	if err != nil {
		return 0, err
	}
	if old == "" {
		return 0, fmt.Errorf("agent: replace in %s: old_str is empty", name)
	}
	n := strings.Count(c, old)
	if n == 0 {
		return 0, fmt.Errorf("agent: replace in %s: old_str not found", name)
	}
	return n, fs.Write(name, strings.ReplaceAll(c, old, new), false)
}

// Path returns the on-disk path of an existing file.
func (fs *FileSystem) Path(name string) (string, error) {
	if _, err := fs.Read(name); err != nil {
		return "", err
	}
	n, _ := CleanName(name)
	return filepath.Join(fs.dir, n), nil
}

// Names lists the files, sorted.
func (fs *FileSystem) Names() []string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.namesLocked()
}

func (fs *FileSystem) namesLocked() []string {
	out := make([]string, 0, len(fs.files))
	for n := range fs.files {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// describe renders the files for <agent_state>: short files whole, long
// ones as head and tail; todo.md is shown separately.
func (fs *FileSystem) describe() string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var b strings.Builder
	for _, n := range fs.namesLocked() {
		if n == "todo.md" {
			continue
		}
		c := fs.files[n]
		fmt.Fprintf(&b, "<file name=%q chars=%d>\n", n, len(c))
		if len(c) <= 600 {
			b.WriteString(c)
		} else {
			b.WriteString(shorten(c, 600))
		}
		b.WriteString("\n</file>\n")
	}
	return b.String()
}
