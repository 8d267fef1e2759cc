package watchdogs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"strconv"
	"strings"
)

// ErrURLBlocked is matched by every refusal of a [URLPolicy]:
// errors.Is(err, ErrURLBlocked) holds for a *BlockedURLError.
var ErrURLBlocked = errors.New("watchdogs: url blocked by policy")

// BlockedURLError says which URL a policy refused, where, and why.
type BlockedURLError struct {
	URL    string
	Kind   NavigationKind
	Reason string
}

func (e *BlockedURLError) Error() string {
	return fmt.Sprintf("url blocked by policy (%s): %s: %s", e.Kind, e.URL, e.Reason)
}

// Unwrap makes errors.Is(err, ErrURLBlocked) hold.
func (e *BlockedURLError) Unwrap() error { return ErrURLBlocked }

// NavigationKind tells a policy how a URL is about to be reached.
type NavigationKind string

const (
	// KindNavigate is a navigation the agent or caller asked for.
	KindNavigate NavigationKind = "navigate"
	// KindRedirect is a server or client redirect of a navigation.
	KindRedirect NavigationKind = "redirect"
	// KindNewTab is a tab or popup the page opened itself.
	KindNewTab NavigationKind = "new_tab"
	// KindSubframe is an iframe's document.
	KindSubframe NavigationKind = "subframe"
)

// URLRequest is what a [URLPolicy] decides on.
type URLRequest struct {
	// URL is the address as the browser will request it.
	URL string
	// Kind says how it is reached.
	Kind NavigationKind
	// TargetID is the tab (or frame target) the load happens in, if known.
	TargetID string
}

// URLPolicy decides whether a URL may load. It is consulted before a
// navigation is sent, on every redirect, for every new tab and for sub-frames,
// so it must be fast and must not block on the browser. A nil error allows;
// a refusal should be a *BlockedURLError so that callers can tell a policy
// decision from a failure. Implementations must be safe for concurrent use.
type URLPolicy interface {
	CheckURL(ctx context.Context, req URLRequest) error
}

// URLPolicyFunc adapts a function to [URLPolicy].
type URLPolicyFunc func(ctx context.Context, req URLRequest) error

// CheckURL calls f.
func (f URLPolicyFunc) CheckURL(ctx context.Context, req URLRequest) error { return f(ctx, req) }

// DomainPolicy is the default [URLPolicy]. Unlike browser-use, every scheme is
// decided: only http and https (plus the blank pages) load unless
// AllowedSchemes names more, so data:, file:, javascript: and chrome: URLs are
// refused by default. A blob: URL is judged by the origin inside it.
//
// Domain patterns, for Allowed and Prohibited:
//   - "example.com" matches example.com and www.example.com;
//   - "*.example.com" matches every subdomain and example.com itself;
//   - a glob such as "shop-*.example.com" matches with path.Match rules;
//   - a scheme prefix ("https://example.com") restricts the scheme;
//   - a port suffix ("localhost:8080") restricts the port.
//
// Prohibited wins over Allowed; when Allowed is non-empty a host must match it.
type DomainPolicy struct {
	Allowed          []string
	Prohibited       []string
	BlockIPAddresses bool
	// AllowedSchemes adds schemes beyond http and https, e.g. "data".
	AllowedSchemes []string
}

var blankPages = map[string]bool{
	"about:blank":            true,
	"about:srcdoc":           true,
	"chrome://newtab/":       true,
	"chrome://new-tab-page/": true,
	"chrome-search://local-ntp/local-ntp.html": true,
}

// CheckURL implements [URLPolicy].
func (p *DomainPolicy) CheckURL(_ context.Context, req URLRequest) error {
	block := func(reason string) error {
		return &BlockedURLError{URL: req.URL, Kind: req.Kind, Reason: reason}
	}
	raw := strings.TrimSpace(req.URL)
	if raw == "" {
		return block("empty url")
	}
	if blankPages[strings.ToLower(raw)] {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return block("unparsable url: " + err.Error())
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme == "blob" {
		// blob:https://example.com/uuid carries its creator's origin.
		inner, err := url.Parse(u.Opaque)
		if err != nil || inner.Host == "" {
			return block("blob url without an origin")
		}
		u, scheme = inner, strings.ToLower(inner.Scheme)
	}
	if scheme != "http" && scheme != "https" {
		if !p.schemeAllowed(scheme) {
			return block(fmt.Sprintf("scheme %q is not allowed", scheme))
		}
		if u.Host == "" {
			// data:, javascript: and the like have no host to match.
			return nil
		}
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return block("url has no host")
	}
	if p.BlockIPAddresses && isIPHost(host) {
		return block("ip addresses are blocked")
	}
	for _, pat := range p.Prohibited {
		if matchPattern(pat, scheme, host, u.Port()) {
			return block("domain is prohibited by " + strconv.Quote(pat))
		}
	}
	if len(p.Allowed) == 0 {
		return nil
	}
	for _, pat := range p.Allowed {
		if matchPattern(pat, scheme, host, u.Port()) {
			return nil
		}
	}
	return block("domain is not in the allowed list")
}

func (p *DomainPolicy) schemeAllowed(scheme string) bool {
	for _, s := range p.AllowedSchemes {
		if strings.EqualFold(strings.TrimSuffix(s, ":"), scheme) {
			return true
		}
	}
	return false
}

// MatchDomain reports whether a URL's host (and scheme and port, when the
// pattern names them) matches one domain pattern of [DomainPolicy].
func MatchDomain(pattern, rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	return matchPattern(pattern, strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port())
}

func matchPattern(pattern, scheme, host, port string) bool {
	pat := strings.ToLower(strings.TrimSpace(pattern))
	if pat == "" {
		return false
	}
	if i := strings.Index(pat, "://"); i >= 0 {
		if pat[:i] != scheme {
			return false
		}
		pat = pat[i+3:]
	}
	pat = strings.TrimSuffix(pat, "/")
	if h, pt, err := net.SplitHostPort(pat); err == nil {
		if pt != port && !(port == "" && defaultPort(scheme) == pt) {
			return false
		}
		pat = h
	}
	switch {
	case strings.HasPrefix(pat, "*."):
		apex := pat[2:]
		if host == apex || strings.HasSuffix(host, "."+apex) {
			return true
		}
		ok, _ := path.Match(pat, host)
		return ok
	case strings.ContainsAny(pat, "*?["):
		ok, _ := path.Match(pat, host)
		return ok
	default:
		return host == pat || host == "www."+pat
	}
}

func defaultPort(scheme string) string {
	switch scheme {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// isIPHost reports whether host names an IP address in any notation a browser
// accepts: dotted quad, IPv6, and the inet_aton forms (a single decimal, hex
// or octal number, or fewer than four parts) that Chromium also resolves.
func isIPHost(host string) bool {
	h := strings.Trim(host, "[]")
	if net.ParseIP(h) != nil {
		return true
	}
	parts := strings.Split(strings.TrimSuffix(h, "."), ".")
	if len(parts) > 4 {
		return false
	}
	for _, part := range parts {
		if part == "" {
			return false
		}
		if _, err := strconv.ParseUint(part, 0, 32); err != nil {
			return false
		}
	}
	return true
}
