package dom

import (
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/urlmatch"
)

// Bounds of the blocked-request summary kept between two observations: a
// page retrying a refused beacon in a loop, or a tracker fanning out over
// many hosts, must not grow memory (or the model's prompt).
const (
	// MaxBlockedHosts bounds the hosts listed; requests to further hosts
	// are only counted, and the observation's Hints say how many.
	MaxBlockedHosts = 50
	// maxBlockedTypes bounds the resource types kept per host (Chromium
	// has about twenty; the bound guards against an emitter's free text).
	maxBlockedTypes = 20
)

// blockedLog accumulates the RequestBlocked events since the last
// observation, by host. The zero value is empty and ready. Not safe for
// concurrent use: the watchdog's mutex guards it.
type blockedLog struct {
	hosts map[string]*events.BlockedRequests
	// others counts the requests to hosts beyond MaxBlockedHosts.
	others int
}

// add records one refused request.
func (l *blockedLog) add(ev events.RequestBlockedEvent) {
	host := blockedHost(ev)
	b := l.hosts[host]
	if b == nil {
		if len(l.hosts) >= MaxBlockedHosts {
			l.others++
			return
		}
		if l.hosts == nil {
			l.hosts = map[string]*events.BlockedRequests{}
		}
		b = &events.BlockedRequests{Host: host}
		l.hosts[host] = b
	}
	b.Count++
	// Chromium's names lower-cased ("Script" → "script", "XHR" → "xhr").
	if t := strings.ToLower(strings.TrimSpace(ev.ResourceType)); t != "" && len(b.Types) < maxBlockedTypes && !slices.Contains(b.Types, t) {
		b.Types = append(b.Types, t)
	}
}

// take returns the summary, most-refused host first (ties by host name),
// and a hint for the requests to hosts beyond the bound ("" when none),
// and empties the log. An empty log yields nil.
func (l *blockedLog) take() ([]events.BlockedRequests, string) {
	var out []events.BlockedRequests
	for _, b := range l.hosts {
		out = append(out, *b)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Host < out[j].Host
	})
	var hint string
	if l.others > 0 {
		hint = fmt.Sprintf("The URL policy also refused %d %s to other hosts (not listed).", l.others, plural(l.others, "request", "requests"))
	}
	*l = blockedLog{}
	return out, hint
}

// blockedHost is the host a refusal is filed under: the event's canonical
// Host, else the URL's host name; a URL without a host (data:, file:)
// is filed under its scheme ("data:").
func blockedHost(ev events.RequestBlockedEvent) string {
	if ev.Host != "" {
		return ev.Host
	}
	if h := urlmatch.Host(ev.URL); h != "" {
		return h
	}
	if u, err := url.Parse(ev.URL); err == nil {
		if u.Scheme != "" {
			return strings.ToLower(u.Scheme) + ":"
		}
	}
	return "(unknown host)"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
