package security

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/browseragent/browseragent/urlmatch"
)

// ErrURLBlocked is matched by every refusal of a [URLPolicy]:
// errors.Is(err, ErrURLBlocked) holds for a *BlockedURLError.
var ErrURLBlocked = errors.New("security: url blocked by policy")

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
	// KindSubresource is any other request of a page, frame or worker
	// (script, image, fetch, beacon, ...), judged in the "requests" scope.
	KindSubresource NavigationKind = "subresource"
	// KindConnection is a connection the network guard is asked to open
	// (a tunnel for https, wss or ws, or a plain http request): the URL
	// is scheme://host:port/ for a tunnel, so only the host, port and a
	// guessed scheme (http for port 80, https otherwise) are known.
	KindConnection NavigationKind = "connection"
)

// URLRequest is what a [URLPolicy] decides on.
type URLRequest struct {
	// URL is the address as the browser will request it.
	URL string
	// Kind says how it is reached.
	Kind NavigationKind
	// TargetID is the tab (or frame or worker target) the load happens in,
	// if known.
	TargetID string
	// ResourceType is Chromium's resource type for KindSubresource
	// ("Script", "Fetch", "Image", ...), "Document" for documents, "" when
	// unknown (the guard's connections).
	ResourceType string
}

// URLPolicy decides whether a URL may load. It is consulted before a
// navigation is sent, on every redirect, for every new tab and for
// sub-frames, and in the requests scope for every request of every target
// and every connection the network guard is asked to open ([KindConnection]:
// a policy that allows a host must allow its connections too). It must be
// fast and must not block on the browser. A nil error allows;
// a refusal should be a *BlockedURLError so that callers can tell a policy
// decision from a failure. Implementations must be safe for concurrent use.
//
// A policy that also has a method Validate() error is validated when the
// watchdog attaches: an error fails the session's Start.
type URLPolicy interface {
	CheckURL(ctx context.Context, req URLRequest) error
}

// URLPolicyFunc adapts a function to [URLPolicy].
type URLPolicyFunc func(ctx context.Context, req URLRequest) error

// CheckURL calls f.
func (f URLPolicyFunc) CheckURL(ctx context.Context, req URLRequest) error { return f(ctx, req) }

// PatternError is a domain pattern of a [DomainPolicy] that does not parse.
// It unwraps to the [urlmatch.Parse] error, so errors.Is(err,
// urlmatch.ErrInvalidPattern) holds.
type PatternError struct {
	// List is the list the pattern is in: "Allowed" or "Prohibited", or
	// "AllowedDomains" or "ProhibitedDomains" when the watchdog built the
	// policy from the session profile.
	List string
	// Index is the pattern's position in that list.
	Index int
	// Pattern is the pattern as written.
	Pattern string
	// Err is urlmatch.Parse's error; it names the pattern and the fault.
	Err error
}

func (e *PatternError) Error() string {
	return fmt.Sprintf("security: invalid domain pattern in %s[%d]: %v", e.List, e.Index, e.Err)
}

// Unwrap returns the urlmatch error.
func (e *PatternError) Unwrap() error { return e.Err }

// DomainPolicy is the default [URLPolicy]. Unlike browser-use, every scheme is
// decided: only http and https (plus the blank pages) load unless
// AllowedSchemes names more, so data:, file:, javascript: and chrome: URLs are
// refused by default. A blob: URL is judged by the origin inside it.
//
// Allowed and Prohibited hold domain patterns as package [urlmatch] defines
// them ("example.com" also covers www.example.com, "*.example.com" covers
// the apex and every subdomain, globs, "https://" and ":8080" restrictions).
// Both lists are matched on one canonical host: the URL is read as Chromium
// reads it ([urlmatch.ParseURL]: backslashes, user info, percent-escapes and
// full-width dots in the host, an explicit default port) and the host
// compared as [urlmatch.NormalizeHost] gives it (case, one trailing dot,
// UTS #46 and punycode, every IPv4 notation, IPv4-mapped IPv6, brackets).
// So every spelling Chromium loads as one host gets one decision.
//
// A Prohibited pattern also covers every subdomain of what it matches: it
// refuses a host when it matches the host or any parent domain of it (the
// host with leading labels removed), so "secret.corp.test" refuses
// x.secret.corp.test even under an Allowed "*.corp.test". A glob, scheme or
// port in the pattern still applies to the parent ("https://secret.test"
// refuses https://x.secret.test but not http://x.secret.test). An IP
// address has no parents. Allowed patterns cover what they match only, as
// urlmatch defines it.
//
// Prohibited wins over Allowed; when Allowed is non-empty a host must match
// it. A URL that does not parse (every URL Chromium refuses, and the odd
// one it would load) or has no host (other than a blank page or a host-less
// URL of an allowed scheme, such as data:) is refused, and so is a host with
// an empty label ("a..b", ".a", "a.."), which no pattern can name.
//
// Check a policy with [DomainPolicy.Validate] before using it: the watchdog
// does so when it attaches and fails the session's Start on an invalid
// pattern. CheckURL refuses every URL but the blank pages while a pattern is
// invalid (the policy fails closed). Do not change the fields while the policy
// is in use.
type DomainPolicy struct {
	// Allowed, when non-empty, are the only hosts that may load.
	Allowed []string
	// Prohibited hosts, and their subdomains, never load, even when Allowed
	// matches them.
	Prohibited []string
	// BlockIPAddresses refuses hosts that are IP addresses in any notation
	// a browser accepts (dotted, single number, hex, octal, IPv6, IPv4-mapped).
	BlockIPAddresses bool
	// AllowedSchemes adds schemes beyond http and https, e.g. "data".
	AllowedSchemes []string
}

// Validate reports every pattern of Allowed and Prohibited that does not
// parse, each as a *PatternError (joined with errors.Join when there are
// several); nil means the policy is usable.
func (p *DomainPolicy) Validate() error {
	_, _, err := p.compile("Allowed", "Prohibited")
	return err
}

// compile parses both lists; the names go into the errors.
func (p *DomainPolicy) compile(allowedName, prohibitedName string) (allowed, prohibited []urlmatch.Pattern, err error) {
	var errs []error
	parse := func(list string, pats []string) []urlmatch.Pattern {
		out := make([]urlmatch.Pattern, 0, len(pats))
		for i, s := range pats {
			pat, err := urlmatch.Parse(s)
			if err != nil {
				errs = append(errs, &PatternError{List: list, Index: i, Pattern: s, Err: err})
				continue
			}
			out = append(out, pat)
		}
		return out
	}
	allowed = parse(allowedName, p.Allowed)
	prohibited = parse(prohibitedName, p.Prohibited)
	return allowed, prohibited, errors.Join(errs...)
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
	raw := urlmatch.Clean(req.URL)
	if raw == "" {
		return block("empty url")
	}
	if blankPages[strings.ToLower(raw)] {
		return nil
	}
	// Patterns are parsed on every call (well under a microsecond each) so that the
	// policy stays a plain value without a cache to keep in step.
	allowed, prohibited, err := p.compile("Allowed", "Prohibited")
	if err != nil {
		return block("the policy has an invalid domain pattern: " + err.Error())
	}
	// Read as Chromium reads it, so that the host judged is the host loaded.
	u, err := urlmatch.ParseURL(raw)
	if err != nil {
		return block("unparsable url: " + err.Error())
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme == "blob" {
		// blob:https://example.com/uuid carries its creator's origin.
		inner, err := urlmatch.ParseURL(u.Opaque)
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
	// From here u has a host, so urlmatch judges it rather than reporting
	// "no match" for a URL it cannot read (which a block list would allow).
	host := urlmatch.NormalizeHost(u.Hostname())
	if host == "" {
		return block("url has no host")
	}
	ip := isIPHost(host)
	if !ip && strings.Contains("."+host+".", "..") {
		// Chromium keeps such a host as written, so no pattern names it,
		// and a block list must not let it through as "no match".
		return block("host has an empty label")
	}
	if p.BlockIPAddresses && ip {
		return block("ip addresses are blocked")
	}
	if pat, ok := matchProhibited(prohibited, u, host, ip); ok {
		return block("domain is prohibited by " + strconv.Quote(pat.String()))
	}
	if len(p.Allowed) == 0 {
		return nil
	}
	if _, ok := urlmatch.MatchAny(allowed, u); ok {
		return nil
	}
	return block("domain is not in the allowed list")
}

// matchProhibited returns the first prohibited pattern that matches u, or
// u with its host (normalised, as host) replaced by one of its parent
// domains; an IP address has none. The scheme and port stay u's, so a
// pattern's restrictions apply to the parents too.
func matchProhibited(prohibited []urlmatch.Pattern, u *url.URL, host string, ip bool) (urlmatch.Pattern, bool) {
	if pat, ok := urlmatch.MatchAny(prohibited, u); ok || ip {
		return pat, ok
	}
	port := u.Port()
	for h := host; ; {
		_, parent, ok := strings.Cut(h, ".")
		if !ok || parent == "" {
			return urlmatch.Pattern{}, false
		}
		h = parent
		pu := &url.URL{Scheme: u.Scheme, Host: h}
		if port != "" {
			pu.Host = h + ":" + port
		}
		if pat, ok := urlmatch.MatchAny(prohibited, pu); ok {
			return pat, true
		}
	}
}

func (p *DomainPolicy) schemeAllowed(scheme string) bool {
	for _, s := range p.AllowedSchemes {
		if strings.EqualFold(strings.TrimSuffix(strings.TrimSpace(s), ":"), scheme) {
			return true
		}
	}
	return false
}

// isIPHost reports whether host, normalised by [urlmatch.NormalizeHost],
// names an IP address. NormalizeHost already turns every IPv4 spelling a
// browser accepts (a single decimal, hex or octal number, fewer than four
// parts) into a dotted quad and an IPv4-mapped IPv6 address into IPv4.
func isIPHost(host string) bool {
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	// A host whose last label is a number is read by browsers as IPv4 or
	// refused ("256.0.0.1", "1.2.3.4.5"); it is never a name.
	last := host[strings.LastIndexByte(host, '.')+1:]
	if hex, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}
