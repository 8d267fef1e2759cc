package urlmatch

import (
	"errors"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// specialDefaultPorts are the WHATWG "special" schemes other than file, which
// Chromium parses with the rules [ParseURL] follows, and their default ports.
var specialDefaultPorts = map[string]int{"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}

// ParseURL parses rawURL as Chromium reads a URL it is about to load, so that
// every spelling of one host comes back with the same host. It is what
// [Pattern.MatchURL] and [Match] use, and what a caller deciding on URLs
// should use in place of [url.Parse].
//
// First, as a browser does with typed or linked text, leading and trailing
// spaces and C0 control characters are dropped and tabs and newlines are
// removed anywhere. Then, for the schemes http, https, ws, wss and ftp
// (case-insensitive):
//   - any run of '/' and '\' may follow "scheme:" ("http:host",
//     "http:\\host" and "http:///host" all name host), and '\' is '/' in the
//     path;
//   - the authority ends at the first '/', '\', '?' or '#', and user info
//     ends at its last '@';
//   - the host is percent-decoded, mapped and converted to ASCII as UTS #46
//     says (lower case, full-width letters and the dots U+3002, U+FF0E and
//     U+FF61 as ASCII, punycode), and a host that ends in a number is read
//     as IPv4 in any notation (decimal, octal, hex, one to four parts) and
//     written as a dotted quad; an IPv6 address keeps its brackets and is
//     written in RFC 5952 form;
//   - a trailing dot stays, since Chromium keeps it (matching drops it; see
//     [NormalizeHost]);
//   - the port may have leading zeros; the scheme's default port is
//     removed;
//   - characters net/url refuses elsewhere in the URL (controls, spaces, a
//     '%' that starts no escape) are percent-encoded, as Chromium encodes
//     them.
//
// The result's Host is then canonical: two spellings Chromium loads as one
// host give one Host. ParseURL returns an error (a *url.Error) where
// Chromium refuses the URL: an empty host, a host with a forbidden
// character (space, '%', '<', '|', ...) after decoding, a host that is not
// valid UTF-8 or not a valid internationalised name, an invalid IPv4 or
// IPv6 address, an IPv6 zone, or a port that is not a number up to 65535.
// It may also refuse the odd URL Chromium would load; it never returns a
// host that Chromium would read differently.
//
// Other schemes are parsed by [url.Parse] after the same clean-up, with
// their host as written.
func ParseURL(rawURL string) (*url.URL, error) {
	s := Clean(rawURL)
	scheme, rest, ok := splitScheme(s)
	if !ok {
		return url.Parse(s)
	}
	scheme = asciiLower(scheme)
	defPort, special := specialDefaultPorts[scheme]
	if !special {
		return url.Parse(s)
	}
	fail := func(why string) (*url.URL, error) {
		return nil, &url.Error{Op: "parse", URL: rawURL, Err: errors.New(why)}
	}
	rest = strings.TrimLeft(rest, `/\`)
	end := strings.IndexAny(rest, `/\?#`)
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	userinfo, hostport := "", authority
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		userinfo, hostport = authority[:i], authority[i+1:]
	}
	rawHost, rawPort := hostport, ""
	// The port follows the last ':' that is not inside an IPv6 literal, as
	// Chromium splits it.
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && i > strings.LastIndexByte(hostport, ']') {
		rawHost, rawPort = hostport[:i], hostport[i+1:]
	}
	host, why := canonicalHost(rawHost)
	if why != "" {
		return fail(why)
	}
	port, ok := canonicalPort(rawPort, defPort)
	if !ok {
		return fail("invalid port " + strconv.Quote(rawPort))
	}

	var b strings.Builder
	b.WriteString(scheme)
	b.WriteString("://")
	if userinfo != "" {
		b.WriteString(escapeLoose(userinfo, isUserinfoByte))
		b.WriteByte('@')
	}
	b.WriteString(host)
	if port != "" {
		b.WriteByte(':')
		b.WriteString(port)
	}
	pathEnd := strings.IndexAny(tail, "?#")
	if pathEnd < 0 {
		pathEnd = len(tail)
	}
	b.WriteString(escapeLoose(strings.ReplaceAll(tail[:pathEnd], `\`, "/"), nil))
	b.WriteString(escapeLoose(tail[pathEnd:], nil))
	u, err := url.Parse(b.String())
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &url.Error{Op: "parse", URL: rawURL, Err: err}
	}
	return u, nil
}

// Clean does what a browser does to typed or linked text before parsing
// it as a URL: leading and trailing spaces and C0 controls go, and so do
// tabs and newlines anywhere ("java\tscript:" is javascript:). ParseURL
// cleans first; callers that compare URL strings clean the same way.
func Clean(s string) string {
	s = strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	if !strings.ContainsAny(s, "\t\n\r") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '\t' && c != '\n' && c != '\r' {
			b = append(b, c)
		}
	}
	return string(b)
}

// splitScheme splits "scheme:rest" where scheme is an ASCII letter followed
// by letters, digits, '+', '-' and '.'.
func splitScheme(s string) (scheme, rest string, ok bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return s[:i], s[i+1:], true
		default:
			return "", "", false
		}
	}
	return "", "", false
}

// canonicalHost is Chromium's canonical form of the host of a special URL,
// or why there is none.
func canonicalHost(raw string) (host, why string) {
	if raw == "" {
		return "", "empty host"
	}
	if raw[0] == '[' {
		inner, ok := strings.CutSuffix(raw[1:], "]")
		if !ok {
			return "", "unclosed IPv6 address"
		}
		// Browsers take no zone ("%eth0") and no escapes inside brackets.
		ip, err := netip.ParseAddr(inner)
		if err != nil || !ip.Is6() || ip.Zone() != "" {
			return "", "invalid IPv6 address"
		}
		return "[" + ip.String() + "]", ""
	}
	h := percentDecode(raw)
	if !utf8.ValidString(h) {
		return "", "host is not valid UTF-8"
	}
	h = asciiLower(h)
	// Pure ASCII needs no mapping, but a punycode label must decode to a
	// valid name, which Chromium checks too.
	if !isASCII(h) || strings.Contains(h, "xn--") {
		a, err := idnaProfile.ToASCII(h)
		if err != nil {
			return "", "not a valid internationalised name"
		}
		h = a
	}
	if h == "" {
		return "", "empty host"
	}
	for i := 0; i < len(h); i++ {
		if isForbiddenHostByte(h[i]) {
			return "", "forbidden character " + strconv.QuoteRune(rune(h[i])) + " in host"
		}
	}
	t := strings.TrimSuffix(h, ".")
	if endsInNumber(t[strings.LastIndexByte(t, '.')+1:]) {
		ip, ok := parseIPv4(t)
		if !ok {
			return "", "invalid IPv4 address"
		}
		return ip, ""
	}
	return h, ""
}

// isForbiddenHostByte reports the WHATWG forbidden domain code points in
// ASCII: C0 controls, space, DEL and "#%/:<>?@[\]^|".
func isForbiddenHostByte(c byte) bool {
	return c <= ' ' || c == 0x7f || strings.IndexByte("#%/:<>?@[\\]^|", c) >= 0
}

// canonicalPort reads a URL's port: "" or digits with any number of leading
// zeros up to 65535. The default port comes back as "".
func canonicalPort(s string, defPort int) (string, bool) {
	if s == "" {
		return "", true
	}
	if strings.Trim(s, "0123456789") != "" {
		return "", false
	}
	s = strings.TrimLeft(s, "0")
	if s == "" {
		s = "0"
	}
	if len(s) > 5 {
		return "", false
	}
	n, _ := strconv.Atoi(s)
	switch {
	case n > 65535:
		return "", false
	case n == defPort:
		return "", true
	}
	return strconv.Itoa(n), true
}

// percentDecode decodes every "%XX" of s; a '%' that starts no escape is
// kept (and then refused as a host character).
func percentDecode(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

// escapeLoose percent-encodes what net/url refuses but Chromium takes (and
// encodes itself): control characters, spaces, a '%' that starts no escape,
// and any byte keep rejects. A nil keep keeps every other byte.
func escapeLoose(s string, keep func(byte) bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c > ' ' && c != 0x7f && (keep == nil || keep(c))
		if c == '%' {
			ok = i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2])
		}
		if ok {
			if b != nil {
				b = append(b, c)
			}
			continue
		}
		if b == nil {
			b = append(make([]byte, 0, len(s)+8), s[:i]...)
		}
		b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
	}
	if b == nil {
		return s
	}
	return string(b)
}

// isUserinfoByte is the set net/url accepts in user info.
func isUserinfoByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("-._:~!$&'()*+,;=%@", c) >= 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// asciiLower lower-cases ASCII letters only. Other letters are left to the
// UTS #46 mapping, which differs from Unicode lower-casing ("ẞ" is "ss"
// there, "ß" for strings.ToLower).
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
