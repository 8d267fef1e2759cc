package urlmatch

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"
)

// ErrInvalidPattern is wrapped by every error [Parse] returns:
// errors.Is(err, ErrInvalidPattern) holds for an empty or malformed pattern.
var ErrInvalidPattern = errors.New("urlmatch: invalid pattern")

type kind uint8

const (
	kindNone   kind = iota // the zero Pattern: matches nothing
	kindAny                // "*": any host
	kindExact              // "example.com": the host and www.<host>
	kindDomain             // "*.example.com": the apex and every subdomain
	kindGlob               // any other glob: path.Match on the whole host
)

// Pattern is a parsed domain pattern; see the package documentation for the
// syntax. The zero value matches nothing. Patterns are comparable and
// immutable, so they may be shared between goroutines.
type Pattern struct {
	raw    string
	scheme string // "" allows any scheme
	port   int    // 0 allows any port
	kind   kind
	host   string // normalised host (kindExact), apex (kindDomain) or glob
	glob   bool   // host holds path.Match metacharacters
	ip     bool   // host is an IP address, which has no www. form
	// uglob is the glob in Unicode when a wildcard label is not ASCII
	// ("bü*.example"): such a label cannot be written in punycode, so it is
	// matched against the host's Unicode form instead. Otherwise "".
	uglob string
}

// Parse parses a domain pattern. It returns an error wrapping
// [ErrInvalidPattern] when s is empty or only spaces, has an empty or
// malformed scheme or host, a path, a port that is not a number from 1 to
// 65535, a character that cannot be in a host name, or a glob that
// [path.Match] rejects.
func Parse(s string) (Pattern, error) {
	invalid := func(why string) (Pattern, error) {
		return Pattern{}, fmt.Errorf("%w %q: %s", ErrInvalidPattern, s, why)
	}
	// Only ASCII is lower-cased: a name's other letters are mapped by UTS #46
	// as a URL's host is, which strings.ToLower would pre-empt ("ẞ").
	rest := asciiLower(strings.TrimSpace(s))
	if rest == "" {
		return invalid("empty")
	}
	p := Pattern{raw: s}
	if scheme, after, ok := strings.Cut(rest, "://"); ok {
		if !validScheme(scheme) {
			return invalid("bad scheme")
		}
		p.scheme, rest = scheme, after
	}
	rest = strings.TrimSuffix(rest, "/")
	host, port, hasPort, why := splitHostPort(rest)
	if why != "" {
		return invalid(why)
	}
	if hasPort {
		n, ok := parsePort(port)
		if !ok {
			return invalid("bad port")
		}
		p.port = n
	}
	switch {
	case host == "":
		return invalid("no host")
	case host == "*":
		p.kind = kindAny
		return p, nil
	case strings.HasPrefix(host, "*."):
		p.kind, host = kindDomain, host[2:]
	case hasMeta(host):
		p.kind = kindGlob
	default:
		p.kind = kindExact
	}
	if hasMeta(host) {
		p.glob = true
		p.host, p.uglob, why = compileGlob(host)
	} else {
		p.host, p.ip, why = compileName(host)
	}
	if why != "" {
		return invalid(why)
	}
	return p, nil
}

// String returns the pattern exactly as it was given to [Parse], or "" for
// the zero Pattern.
func (p Pattern) String() string { return p.raw }

// Match reports whether u matches p: u has a host, its scheme and port (the
// scheme's default when u names none) satisfy any restriction of p, and its
// host matches p's host. A blob: URL is judged by the origin inside it. A nil
// u matches nothing.
func (p Pattern) Match(u *url.URL) bool {
	t, ok := targetOf(u)
	return ok && p.matchTarget(t)
}

// MatchURL is [Pattern.Match] for a URL string, which it reads with
// [ParseURL], as Chromium reads it; it reports false when rawURL does not
// parse.
func (p Pattern) MatchURL(rawURL string) bool {
	u, err := ParseURL(rawURL)
	return err == nil && p.Match(u)
}

// MatchHost reports whether a bare host (no port; an IPv6 address may be in
// brackets) matches p. It is false for the empty host, and for every host
// when p restricts the scheme or the port, since a host alone cannot satisfy
// those.
func (p Pattern) MatchHost(host string) bool {
	if p.scheme != "" || p.port != 0 {
		return false
	}
	h := NormalizeHost(host)
	return h != "" && p.matchHost(h)
}

// Match reports whether rawURL matches the domain pattern pattern; it is
// [Parse] followed by [Pattern.MatchURL], and false when either the pattern
// or the URL is invalid. Its signature fits any func(pattern, rawURL string)
// bool matcher hook. Parse once and reuse the [Pattern] where the same
// pattern is checked often.
func Match(pattern, rawURL string) bool {
	p, err := Parse(pattern)
	return err == nil && p.MatchURL(rawURL)
}

// Host returns the host of rawURL as patterns see it: read as Chromium
// reads it ([ParseURL]), a blob: URL by the origin inside it, in the form
// [NormalizeHost] gives. It is "" when rawURL does not parse or has no host.
func Host(rawURL string) string {
	u, err := ParseURL(rawURL)
	if err != nil {
		return ""
	}
	t, ok := targetOf(u)
	if !ok {
		return ""
	}
	return t.host
}

// MatchAny returns the first of patterns that matches u, and whether there
// is one. It reads u once, however many patterns there are.
func MatchAny(patterns []Pattern, u *url.URL) (Pattern, bool) {
	t, ok := targetOf(u)
	if !ok {
		return Pattern{}, false
	}
	for _, p := range patterns {
		if p.matchTarget(t) {
			return p, true
		}
	}
	return Pattern{}, false
}

// target is what a pattern looks at in a URL.
type target struct {
	scheme string // lower case
	host   string // normalised, never empty
	port   int    // explicit or default port; 0 when unknown, -1 when invalid
}

func targetOf(u *url.URL) (target, bool) {
	if u == nil {
		return target{}, false
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme == "blob" {
		// blob:https://example.com/id carries the origin of the page that
		// made it; a blob inside a blob has an opaque origin, like no host.
		inner, err := ParseURL(u.Opaque)
		if err != nil || strings.EqualFold(inner.Scheme, "blob") {
			return target{}, false
		}
		u, scheme = inner, strings.ToLower(inner.Scheme)
	}
	t := target{scheme: scheme, host: NormalizeHost(u.Hostname()), port: defaultPort(scheme)}
	if t.host == "" {
		return target{}, false
	}
	if s := u.Port(); s != "" {
		t.port = -1
		if n, err := strconv.Atoi(s); err == nil {
			t.port = n
		}
	}
	return t, true
}

func (p Pattern) matchTarget(t target) bool {
	switch {
	case p.kind == kindNone:
		return false
	case p.scheme != "" && p.scheme != t.scheme:
		return false
	case p.port != 0 && p.port != t.port:
		return false
	}
	return p.matchHost(t.host)
}

// matchHost matches a normalised, non-empty host.
func (p Pattern) matchHost(h string) bool {
	switch p.kind {
	case kindAny:
		return true
	case kindExact:
		return h == p.host || !p.ip && strings.TrimPrefix(h, "www.") == p.host
	case kindDomain:
		for {
			if p.matchApex(h) {
				return true
			}
			_, parent, ok := strings.Cut(h, ".")
			if !ok {
				return false
			}
			h = parent
		}
	case kindGlob:
		return p.matchGlob(h)
	}
	return false
}

func (p Pattern) matchApex(h string) bool {
	if p.glob {
		return p.matchGlob(h)
	}
	return h == p.host
}

func (p Pattern) matchGlob(h string) bool {
	if ok, _ := path.Match(p.host, h); ok {
		return true
	}
	if p.uglob == "" {
		return false
	}
	ok, _ := path.Match(p.uglob, toUnicode(h))
	return ok
}

// splitHostPort splits the host[:port] part of a pattern. A bracketed or
// bare IPv6 address comes back without brackets. why is non-empty when the
// text cannot be a host.
func splitHostPort(s string) (host, port string, hasPort bool, why string) {
	if rest, ok := strings.CutPrefix(s, "["); ok {
		// "[" also opens a glob class, so only an IPv6 address in the
		// brackets makes this a literal.
		if inner, after, ok := strings.Cut(rest, "]"); ok {
			if ip, err := netip.ParseAddr(inner); err == nil && ip.Is6() {
				if after == "" {
					return inner, "", false, ""
				}
				if port, ok := strings.CutPrefix(after, ":"); ok {
					return inner, port, true, ""
				}
				return "", "", false, "text after an IPv6 address"
			}
		}
	}
	if strings.Count(s, ":") > 1 {
		if _, err := netip.ParseAddr(s); err == nil {
			return s, "", false, "" // bare IPv6, which cannot carry a port
		}
		return "", "", false, "too many colons"
	}
	host, port, hasPort = strings.Cut(s, ":")
	return host, port, hasPort, ""
}

// compileName normalises a host without wildcards and reports whether it
// is an IP address.
func compileName(h string) (name string, ip bool, why string) {
	n, ok := normalizeHost(h)
	if !ok {
		return "", false, "not a valid internationalised name"
	}
	if _, err := netip.ParseAddr(n); err == nil {
		return n, true, ""
	}
	if !validName(n) {
		return "", false, "not a host name"
	}
	return n, false, ""
}

// compileGlob normalises a glob label by label: a label without wildcards is
// converted like any name, one with wildcards is kept as written. It returns
// the glob and, when a wildcard label is not ASCII, its Unicode form.
func compileGlob(g string) (glob, uglob, why string) {
	labels := strings.Split(strings.TrimSuffix(g, "."), ".")
	wildUnicode := false
	for i, l := range labels {
		switch {
		case l == "":
			return "", "", "empty label"
		case hasMeta(l):
			for j := 0; j < len(l); j++ {
				if l[j] < 0x80 && !isNameByte(l[j]) && !strings.ContainsRune("*?[]^", rune(l[j])) {
					return "", "", "not a host name glob"
				}
			}
			if !isASCII(l) {
				// A wildcard label cannot be mapped; lower case is the best
				// approximation of its mapped form.
				labels[i], wildUnicode = strings.ToLower(l), true
			}
		default:
			n, ok := normalizeLabel(l)
			if !ok {
				return "", "", "not a valid internationalised name"
			}
			if !validName(n) {
				return "", "", "not a host name"
			}
			labels[i] = n
		}
	}
	glob = strings.Join(labels, ".")
	if _, err := path.Match(glob, ""); err != nil {
		return "", "", "bad glob"
	}
	if !wildUnicode {
		return glob, "", ""
	}
	for i, l := range labels {
		if !hasMeta(l) {
			labels[i] = toUnicode(l)
		}
	}
	return glob, strings.Join(labels, "."), ""
}

// normalizeLabel converts one label of a glob. Unlike [NormalizeHost] it
// never reads numbers as an IPv4 address: "192" in "192.168.*" is a label.
func normalizeLabel(l string) (string, bool) {
	if isASCII(l) {
		return l, true
	}
	a, err := idnaProfile.ToASCII(l)
	return a, err == nil
}

// validName reports whether n is a dot-separated list of non-empty labels of
// letters, digits, '-' and '_' (which real hosts use, though DNS forbids it).
func validName(n string) bool {
	for l := range strings.SplitSeq(n, ".") {
		if l == "" {
			return false
		}
		for i := 0; i < len(l); i++ {
			if !isNameByte(l[i]) {
				return false
			}
		}
	}
	return true
}

func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

func hasMeta(s string) bool { return strings.ContainsAny(s, "*?[") }

// validScheme reports whether s is an RFC 3986 scheme in lower case.
func validScheme(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// parsePort accepts the decimal ports 1 to 65535.
func parsePort(s string) (int, bool) {
	if s == "" || len(s) > 5 || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, _ := strconv.Atoi(s)
	return n, n >= 1 && n <= 65535
}

func defaultPort(scheme string) int {
	return specialDefaultPorts[scheme]
}
