package downloads

import (
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pathcheck"
)

// The file-name rules: a name the page supplies becomes a safe base name,
// and a file is only ever created inside the directory, never over an
// existing entry.

// fileEvent describes the saved file p; its type and MIME type come from
// the extension.
func fileEvent(guid, rawURL, p string, size int64, auto bool) events.FileDownloadedEvent {
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(p)), ".")
	mt := ""
	if ext != "" {
		mt = mime.TypeByExtension("." + ext)
		if i := strings.IndexByte(mt, ';'); i >= 0 {
			mt = strings.TrimSpace(mt[:i])
		}
	}
	return events.FileDownloadedEvent{
		GUID: guid, URL: rawURL, Path: p, FileName: filepath.Base(p), Size: size,
		FileType: ext, MIMEType: mt, AutoDownload: auto,
	}
}

// contained reports whether p names an entry directly inside dir (not dir
// itself, nothing deeper, nothing outside), lexically (pathcheck resolves . and ..), by the
// system's rules (on Windows: drive letters, UNC shares, any case).
func contained(dir, p string) bool {
	return pathcheck.Child(dir, p)
}

// reserve creates an empty file dir/name (or name (1), name (2), …) with
// O_EXCL, which never follows or replaces an existing entry (symlinks
// included), and returns its path.
func reserve(dir, name string) (string, error) {
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	if stem == "" {
		stem, ext = name, ""
	}
	for i := 0; i < 10000; i++ {
		cand := name
		if i > 0 {
			cand = stem + " (" + strconv.Itoa(i) + ")" + ext
		}
		p := filepath.Join(dir, cand)
		if !contained(dir, p) {
			return "", fmt.Errorf("downloads: the name %q leaves the directory", cand)
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			f.Close()
			return p, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("downloads: no free name for %q (10000 taken)", name)
}

// moveInto renames src to a free, sanitized name inside dir.
func moveInto(dir, src, name string) (string, error) {
	dst, err := reserve(dir, name)
	if err != nil {
		return "", err
	}
	// Rename replaces the empty placeholder we own.
	if err := os.Rename(src, dst); err != nil {
		os.Remove(dst)
		return "", err
	}
	return dst, nil
}

// writeInto writes data to a free, sanitized name inside dir.
func writeInto(dir, name string, data []byte) (string, error) {
	dst, err := reserve(dir, name)
	if err != nil {
		return "", err
	}
	// The placeholder is ours (O_EXCL); open it without O_CREATE.
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		os.Remove(dst)
		return "", err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(dst)
		return "", err
	}
	return dst, nil
}

// maxName caps a file name in bytes (most file systems allow 255).
const maxName = 200

// sanitizeName turns a page-supplied file name into a safe base name:
// only the last path element (either separator), no control or
// Windows-reserved characters, no leading dots or spaces, no trailing dots or
// spaces, no device names, at most maxName bytes (extension kept), and
// "download" when nothing usable is left.
func sanitizeName(name string) string {
	name = strings.ToValidUTF8(name, "_")
	name = strings.ReplaceAll(name, "\\", "/")
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	var b strings.Builder
	for _, r := range name {
		switch {
		case r < 0x20 || r == 0x7f || unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r):
			// dropped: control and invisible formatting (bidi overrides)
		case strings.ContainsRune(`<>:"|?*`, r):
			b.WriteRune('_')
		default:
			b.WriteRune(r)
		}
	}
	name = strings.TrimLeft(b.String(), ". ")
	name = strings.TrimRight(name, ". ")
	if name == "" {
		return "download"
	}
	// A device name (CON, nul.txt, COM1.tar.gz) is no file on Windows,
	// whichever system saves it: the folder may be copied there.
	if pathcheck.Reserved(name) {
		name = "_" + name
	}
	if len(name) > maxName {
		ext := filepath.Ext(name)
		if len(ext) > 20 || !utf8.ValidString(ext) {
			ext = ""
		}
		stem := strings.TrimSuffix(name, ext)
		keep := maxName - len(ext)
		for keep > 0 && !utf8.RuneStart(stem[keep]) {
			keep--
		}
		name = strings.TrimRight(stem[:keep], ". ") + ext
	}
	return name
}

// nameFromURL is the last path element of a URL, for downloads without a
// suggested name.
func nameFromURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "download"
	}
	return path.Base(u.Path)
}
