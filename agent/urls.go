package agent

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
)

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "this page"
	}
	return u.Host
}

// searchURL builds the results page URL of a search engine.
func searchURL(engine, query string) (string, error) {
	q := url.QueryEscape(query)
	switch strings.ToLower(engine) {
	case "duckduckgo", "":
		return "https://duckduckgo.com/?q=" + q, nil
	case "google":
		return "https://www.google.com/search?q=" + q + "&udm=14", nil
	case "bing":
		return "https://www.bing.com/search?q=" + q, nil
	}
	return "", fmt.Errorf("unknown search engine %q (want duckduckgo, google or bing)", engine)
}

// taskURLPatterns are startURL's expressions, compiled on first use rather
// than at init (short commands that link the agent never need them).
var taskURLPatterns = sync.OnceValue(func() (p struct{ email, schemeURL, bareDomain, negation, fileExt, htmlExt *regexp.Regexp }) {
	p.email = regexp.MustCompile(`[\w.+-]+@[\w-]+(\.[\w-]+)+`)
	p.schemeURL = regexp.MustCompile(`https?://[^\s"'<>()\[\]{}]+`)
	p.bareDomain = regexp.MustCompile(`(?i)\b(?:www\.)?[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*\.(?:com|org|net|io|dev|edu|gov|co|ai|app|uk|de|fr|info|me)(?::\d+)?(?:/[^\s"'<>()\[\]{}]*)?`)
	p.negation = regexp.MustCompile(`(?i)\b(never|not|don't|dont|avoid|without|except|instead of)\b`)
	p.fileExt = regexp.MustCompile(`(?i)\.(pdf|docx?|xlsx?|pptx?|csv|txt|md|json|jsonl|zip|png|jpe?g|gif|mp[34]|py|go|js)$`)
	p.htmlExt = regexp.MustCompile(`(?i)\.html?$`)
	return p
})

// startURL returns the one URL a task asks to open, or "" when it names
// none, several, only file-like names, or the URL is negated ("never go to
// x.com") in the 20 characters before it. Bare domains get https://.
func startURL(task string) string {
	re := taskURLPatterns()
	text := re.email.ReplaceAllString(task, " ")
	type cand struct {
		u      string
		pos    int
		scheme bool
	}
	var cands []cand
	for _, m := range re.schemeURL.FindAllStringIndex(text, -1) {
		cands = append(cands, cand{text[m[0]:m[1]], m[0], true})
	}
	masked := re.schemeURL.ReplaceAllStringFunc(text, func(s string) string { return strings.Repeat(" ", len(s)) })
	for _, m := range re.bareDomain.FindAllStringIndex(masked, -1) {
		cands = append(cands, cand{"https://" + masked[m[0]:m[1]], m[0], false})
	}
	seen := map[string]bool{}
	var keep []string
	for _, c := range cands {
		u := strings.TrimRight(c.u, ".,;:!?")
		pu, err := url.Parse(u)
		if err != nil || pu.Host == "" || re.fileExt.MatchString(pu.Path) {
			continue
		}
		// "report.html" in prose is a file name; with a scheme it is a page.
		if re.htmlExt.MatchString(pu.Path) && !c.scheme {
			continue
		}
		before := text[max(0, c.pos-20):c.pos]
		if re.negation.MatchString(before) {
			continue
		}
		if !seen[u] {
			seen[u] = true
			keep = append(keep, u)
		}
	}
	if len(keep) != 1 {
		return ""
	}
	return keep[0]
}
