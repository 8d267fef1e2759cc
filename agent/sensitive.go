package agent

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/browseragent/browseragent/events"
)

// secretRE matches a placeholder the model writes for a secret.
var secretRE = regexp.MustCompile(`<secret>\s*([^<>]*?)\s*</secret>`)

// secrets holds the run's sensitive data and applies the two rules: values
// are resolved only on allowed domains, and scrubbed from every text the
// agent produces.
type secrets struct {
	global   map[string]string
	byDomain map[string]map[string]string
	match    func(pattern, url string) bool
	// scrub pairs, longest value first so a value containing another is
	// replaced whole.
	pairs [][2]string
}

func newSecrets(global map[string]string, byDomain map[string]map[string]string, match func(string, string) bool) *secrets {
	s := &secrets{global: global, byDomain: byDomain, match: match}
	add := func(k, v string) {
		ph := "<secret>" + k + "</secret>"
		s.pairs = append(s.pairs, [2]string{v, ph})
		// A form sends its values in URLs, encoded: the URLs the history
		// and the model see must not hold them either.
		for _, enc := range []string{url.QueryEscape(v), url.PathEscape(v)} {
			if enc != v {
				s.pairs = append(s.pairs, [2]string{enc, ph})
			}
		}
	}
	for k, v := range global {
		add(k, v)
	}
	for _, m := range byDomain {
		for k, v := range m {
			add(k, v)
		}
	}
	sort.Slice(s.pairs, func(i, j int) bool {
		if len(s.pairs[i][0]) != len(s.pairs[j][0]) {
			return len(s.pairs[i][0]) > len(s.pairs[j][0])
		}
		return s.pairs[i][1] < s.pairs[j][1]
	})
	return s
}

func (s *secrets) empty() bool { return len(s.pairs) == 0 }

// names returns the placeholder names usable on url, sorted.
func (s *secrets) names(url string) []string {
	set := map[string]bool{}
	for k := range s.global {
		set[k] = true
	}
	for d, m := range s.byDomain {
		if url != "" && s.match(d, url) {
			for k := range m {
				set[k] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// lookup returns the value of name on url.
func (s *secrets) lookup(name, url string) (string, bool) {
	for d, m := range s.byDomain {
		if v, ok := m[name]; ok && url != "" && s.match(d, url) {
			return v, true
		}
	}
	v, ok := s.global[name]
	return v, ok
}

// resolve replaces every placeholder in text with its value on url. It
// reports the first name used (for the event's SensitiveKey). A placeholder
// that is unknown or not allowed on url is an error naming it (not its
// value).
func (s *secrets) resolve(text, url string) (out string, key string, err error) {
	out = secretRE.ReplaceAllStringFunc(text, func(m string) string {
		if err != nil {
			return m
		}
		name := secretRE.FindStringSubmatch(m)[1]
		v, ok := s.lookup(name, url)
		if !ok {
			err = fmt.Errorf("secret %q is not available on %s", name, hostOf(url))
			return m
		}
		if key == "" {
			key = name
		}
		return v
	})
	return out, key, err
}

// scrub replaces every secret value in text with its placeholder.
func (s *secrets) scrub(text string) string {
	if s == nil {
		return text
	}
	for _, p := range s.pairs {
		if strings.Contains(text, p[0]) {
			text = strings.ReplaceAll(text, p[0], p[1])
		}
	}
	return text
}

// scrubSpaced is scrub for a text whose whitespace runs were collapsed
// (an accessible name): a secret holding such runs is looked for
// collapsed too.
func (s *secrets) scrubSpaced(text string) string {
	text = s.scrub(text)
	if s == nil {
		return text
	}
	for _, p := range s.pairs {
		if c := strings.Join(strings.Fields(p[0]), " "); c != p[0] && c != "" && strings.Contains(text, c) {
			text = strings.ReplaceAll(text, c, p[1])
		}
	}
	return text
}

// scrubCut is scrub for a value an observation cut short: a secret
// crossing the cut left its beginning at the end, which is replaced too
// (beginnings of 3 bytes or more; of any length for a shorter secret).
func (s *secrets) scrubCut(text string) string {
	text = s.scrub(text)
	if s == nil {
		return text
	}
	for _, p := range s.pairs {
		for k := len(p[0]) - 1; k >= 1 && (k >= 3 || len(p[0]) <= 3); k-- {
			if strings.HasSuffix(text, p[0][:k]) {
				return text[:len(text)-k] + p[1]
			}
		}
	}
	return text
}

// scrubItem scrubs what a history item holds of the page: URLs and titles
// (a form sent with GET puts its values in the URL) and the evidence of
// its actions. The texts were scrubbed when they were written.
func (s *secrets) scrubItem(it *HistoryItem) {
	if s.empty() {
		return
	}
	st := &it.State
	st.URL, st.Title, st.Fingerprint = s.scrub(st.URL), s.scrub(st.Title), s.scrub(st.Fingerprint)
	if len(st.Tabs) > 0 {
		tabs := make([]events.TabInfo, len(st.Tabs))
		for i, t := range st.Tabs {
			t.URL, t.Title = s.scrub(t.URL), s.scrub(t.Title)
			tabs[i] = t
		}
		st.Tabs = tabs
	}
	for i := range it.Actions {
		if o := it.Actions[i].Result.Outcome; o != nil {
			c := *o
			c.Before.URL, c.Before.Fingerprint = s.scrub(c.Before.URL), s.scrub(c.Before.Fingerprint)
			c.After.URL, c.After.Fingerprint = s.scrub(c.After.URL), s.scrub(c.After.Fingerprint)
			it.Actions[i].Result.Outcome = &c
		}
		// A replayed or cached action's candidates are named from the
		// live page, which may show a secret.
		if m := it.Actions[i].Match; m != nil && len(m.Candidates) > 0 {
			c := *m
			c.Candidates = slices.Clone(m.Candidates)
			for j := range c.Candidates {
				c.Candidates[j].Name = s.scrub(c.Candidates[j].Name)
			}
			it.Actions[i].Match = &c
		}
	}
}
