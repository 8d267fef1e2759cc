package agent

import (
	"encoding/json"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pathcheck"
)

// What the action cache checks of an action's parameters, besides its
// element: where typed text and URLs came from, and how URLs are
// normalised in the key.

// cacheURLRE finds the URLs in a task or a progress line.
var cacheURLRE = regexp.MustCompile(`https?://[^\s"'<>()\[\]{}\\]+`)

// NormalizeCacheURL is the action cache's default URL normalisation
// (Settings.CacheURL): the URL with the port of a loopback host
// (localhost, 127.0.0.0/8, ::1) dropped, a ;jsessionid=… path parameter
// dropped, and the query parameters named sid, token, _ or starting with
// session (case-insensitive) dropped. A local test server on a random port
// or a session id in the URL then gives the same key on every run. A URL
// that does not parse is returned unchanged.
func NormalizeCacheURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); strings.EqualFold(host, "localhost") || (ip != nil && ip.IsLoopback()) {
		u.Host = host
		if strings.Contains(host, ":") {
			u.Host = "[" + host + "]"
		}
	}
	if i := strings.Index(strings.ToLower(u.Path), ";jsessionid="); i >= 0 {
		u.Path, u.RawPath = u.Path[:i], ""
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			lk := strings.ToLower(k)
			if lk == "sid" || lk == "token" || lk == "_" || strings.HasPrefix(lk, "session") {
				q.Del(k)
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// cacheURLs applies the run's URL normalisation to every URL in text.
func (a *Agent) cacheURLs(text string) string {
	norm := a.set.CacheURL
	if norm == nil {
		norm = NormalizeCacheURL
	}
	return cacheURLRE.ReplaceAllStringFunc(text, norm)
}

// typedOrigin is why action c's typed text or URL may not be stored in
// (or run from) the cache on the page in st, "" when it may: what it
// types must come from the run's tasks (a secret's placeholder is the
// run's own), and a navigate's URL from the tasks, the page's own URL or
// one of its links. Text the model read off the page (a one-time code, a
// price) is the page's, not the task's: a later run would type the old
// value without reading the new one.
func (a *Agent) typedOrigin(c ActionCall, st *events.BrowserState, tasks []string) string {
	var p map[string]any
	if json.Unmarshal(orEmpty(c.Params), &p) != nil {
		return "parameters do not parse"
	}
	str := func(k string) string { s, _ := p[k].(string); return s }
	switch c.Name {
	case "input", "select_dropdown":
		if !fromTasks(a.secrets.scrub(str("text")), tasks) {
			return "typed text not from the task"
		}
	case "send_keys":
		k := a.secrets.scrub(str("keys"))
		if !isKeyNames(k) && !fromTasks(k, tasks) {
			return "typed text not from the task"
		}
	case "navigate":
		u := str("url")
		if !fromTasks(a.secrets.scrub(u), tasks) && !pageLink(u, st) {
			return "URL not from the task or the page"
		}
	}
	return ""
}

// fromTasks reports whether every part of text outside secret
// placeholders is found, case-folded, in one of the tasks.
func fromTasks(text string, tasks []string) bool {
	for _, part := range secretRE.Split(text, -1) {
		part = strings.ToLower(strings.TrimSpace(part))
		if part == "" {
			continue
		}
		if !slices.ContainsFunc(tasks, func(t string) bool { return strings.Contains(strings.ToLower(t), part) }) {
			return false
		}
	}
	return true
}

// pageLink reports whether u is the page's own URL or the target of one
// of its elements' href, resolved against the page's URL.
func pageLink(u string, st *events.BrowserState) bool {
	if st == nil || u == "" {
		return false
	}
	base, err := url.Parse(st.URL)
	if err != nil {
		return false
	}
	same := func(v string) bool { return strings.TrimSuffix(v, "/") == strings.TrimSuffix(u, "/") }
	if same(st.URL) {
		return true
	}
	for _, el := range st.Elements {
		h := el.Attributes["href"]
		if h == "" {
			continue
		}
		if r, err := base.Parse(h); err == nil && same(r.String()) {
			return true
		}
	}
	return false
}

// keyNames are the named keys send_keys presses (lower case); a send_keys
// of such names only ("Tab Tab Enter", "Control+a") types nothing the
// page could have shown.
var keyNames = map[string]bool{
	"enter": true, "return": true, "tab": true, "escape": true, "esc": true, "backspace": true,
	"delete": true, "del": true, "insert": true, "space": true, "home": true, "end": true,
	"pageup": true, "pagedown": true, "arrowup": true, "arrowdown": true, "arrowleft": true,
	"arrowright": true, "up": true, "down": true, "left": true, "right": true,
	"control": true, "ctrl": true, "shift": true, "alt": true, "option": true, "meta": true,
	"cmd": true, "command": true, "f1": true, "f2": true, "f3": true, "f4": true, "f5": true,
	"f6": true, "f7": true, "f8": true, "f9": true, "f10": true, "f11": true, "f12": true,
}

// isKeyNames reports whether keys is a sequence of named keys or
// combinations with a modifier (one character only inside a combination).
func isKeyNames(keys string) bool {
	toks := strings.Fields(keys)
	if len(toks) == 0 {
		return false
	}
	for _, tok := range toks {
		parts := strings.Split(tok, "+")
		for i, part := range parts {
			if keyNames[strings.ToLower(part)] {
				continue
			}
			if i == len(parts)-1 && len(parts) > 1 && len([]rune(part)) == 1 {
				continue
			}
			return false
		}
	}
	return true
}

// usableHere is why a cached action cannot run in this run, "" when it
// can: an upload_file's path must be one the run offers, and every
// secret placeholder must resolve on the page's URL.
func (a *Agent) usableHere(c ActionCall, url string) string {
	var p map[string]any
	if json.Unmarshal(orEmpty(c.Params), &p) != nil {
		return "parameters do not parse"
	}
	if c.Name == "upload_file" {
		path, _ := p["path"].(string)
		if !slices.ContainsFunc(a.set.AvailableFilePaths, func(f string) bool { return f == path || pathcheck.Same(f, path) }) {
			return "its file is not in AvailableFilePaths"
		}
	}
	for _, v := range p {
		if s, ok := v.(string); ok && secretRE.MatchString(s) {
			if _, _, err := a.secrets.resolve(s, url); err != nil {
				return "a secret it uses is not available here"
			}
		}
	}
	return ""
}
