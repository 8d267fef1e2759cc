package urlmatch

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// matchCases is the table every matching entry point is checked against.
// "old" notes where the two matchers this package replaces disagreed:
// watchdogs.MatchDomain (policy) and agent.MatchDomain (agent).
var matchCases = []struct {
	name, pattern, url string
	want               bool
}{
	// Exact names: the host and www.<host>, nothing else.
	{"exact", "example.com", "https://example.com/", true},
	{"exact www", "example.com", "https://www.example.com/x", true},
	{"exact not other subdomain", "example.com", "https://shop.example.com/", false},
	{"exact not www.www", "example.com", "https://www.www.example.com/", false},
	{"exact not suffix", "example.com", "https://evilexample.com/", false},
	{"exact not prefix", "example.com", "https://example.com.evil.org/", false},
	{"exact other domain", "example.com", "https://example.org/", false},
	{"www pattern not apex", "www.example.com", "https://example.com/", false},
	{"exact any port", "example.com", "http://example.com:8080/", true},
	{"exact any scheme", "example.com", "ftp://example.com/", true},
	{"userinfo ignored", "example.com", "https://user:pw@example.com/", true},
	{"userinfo is not the host", "example.com", "https://example.com@evil.org/", false},
	{"host after userinfo", "evil.org", "https://example.com@evil.org/", true},
	{"query is not the host", "example.com", "https://evil.org/?u=example.com", false},
	{"fragment is not the host", "example.com", "https://evil.org/#example.com", false},
	{"underscore host", "my_host.example", "http://my_host.example/", true},
	{"double hyphen host", "r3---sn-abc.googlevideo.com", "https://r3---sn-abc.googlevideo.com/v", true},

	// "*.domain": the apex and every subdomain.
	{"wildcard deep subdomain", "*.example.com", "https://a.b.example.com/", true},
	{"wildcard apex", "*.example.com", "https://example.com/", true},
	{"wildcard www", "*.example.com", "https://www.example.com/", true},
	{"wildcard not suffix", "*.example.com", "https://evilexample.com/", false},
	{"wildcard not prefix", "*.example.com", "https://example.com.evil.org/", false},
	{"wildcard hyphen host", "*.googlevideo.com", "https://r3---sn-abc.googlevideo.com/", true},

	// Other globs, path.Match on the whole host (old: policy only).
	{"glob", "shop-*.example.com", "https://shop-eu.example.com/", true},
	{"glob star spans dots", "shop-*.example.com", "https://shop-eu.west.example.com/", true},
	{"glob needs its literal", "shop-*.example.com", "https://shop.example.com/", false},
	{"glob not apex", "shop-*.example.com", "https://example.com/", false},
	{"glob anchored at start", "shop-*.example.com", "https://a.shop-eu.example.com/", false},
	{"glob anchored at end", "shop-*.example.com", "https://shop-eu.example.com.evil.org/", false},
	{"glob question", "shop-?.example.com", "https://shop-1.example.com/", true},
	{"glob question one char", "shop-?.example.com", "https://shop-12.example.com/", false},
	{"glob class", "[ab].example.com", "https://a.example.com/", true},
	{"glob class miss", "[ab].example.com", "https://c.example.com/", false},
	{"glob negated class", "[^ab].example.com", "https://c.example.com/", true},
	{"wildcard with glob apex", "*.shop-*.example.com", "https://x.shop-eu.example.com/", true},
	{"wildcard with glob apex itself", "*.shop-*.example.com", "https://shop-eu.example.com/", true},
	{"wildcard with glob apex miss", "*.shop-*.example.com", "https://x.example.com/", false},
	{"ip glob", "10.0.0.*", "http://10.0.0.7/", true},
	{"ip glob miss", "10.0.0.*", "http://10.0.1.7/", false},
	{"ip glob short form", "10.0.0.*", "http://10.7/", true},

	// "*": any URL with a host (old: policy matched host-less URLs too).
	{"star", "*", "https://anything.org/", true},
	{"star ip", "*", "http://[::1]:8080/", true},
	{"star about:blank", "*", "about:blank", false},
	{"star data", "*", "data:text/html,hi", false},
	{"star javascript", "*", "javascript:alert(1)", false},
	{"star mailto", "*", "mailto:a@example.com", false},
	{"star empty host", "*", "http:///", false},
	{"star host after three slashes", "path", "http:///path", true}, // Chromium: http://path/
	{"star file", "*", "file:///etc/passwd", false},
	{"star with scheme", "https://*", "https://x.org/", true},
	{"star with scheme miss", "https://*", "http://x.org/", false},
	{"star with port", "*:8080", "http://x.org:8080/", true},
	{"star with port miss", "*:8080", "http://x.org/", false},

	// Schemes.
	{"scheme", "https://example.com", "https://example.com/", true},
	{"scheme www", "https://example.com", "https://www.example.com/", true},
	{"scheme miss", "https://example.com", "http://example.com/", false},
	{"scheme upper url", "https://example.com", "HTTPS://EXAMPLE.COM/", true},
	{"scheme upper pattern", "HTTPS://Example.com", "https://example.com/", true},
	{"scheme wss", "wss://example.com", "wss://example.com/socket", true},
	{"scheme ws is not wss", "wss://example.com", "ws://example.com/socket", false},
	{"scheme with wildcard", "https://*.example.com", "https://a.example.com/", true},

	// Ports; a URL without one has its scheme's default
	// (old: the agent compared "" with "443" and said no).
	{"port", "example.com:8080", "http://example.com:8080/", true},
	{"port miss", "example.com:8080", "http://example.com:9090/", false},
	{"port url default", "example.com:8080", "http://example.com/", false},
	{"port 443 https default", "example.com:443", "https://example.com/", true},
	{"port 443 https explicit", "example.com:443", "https://example.com:443/", true},
	{"port 443 http default", "example.com:443", "http://example.com/", false},
	{"port 443 other", "example.com:443", "https://example.com:8443/", false},
	{"port 80 http default", "example.com:80", "http://example.com/", true},
	{"port 80 ws default", "example.com:80", "ws://example.com/", true},
	{"port 443 wss default", "example.com:443", "wss://example.com/", true},
	{"port 80 wss default", "example.com:80", "wss://example.com/", false},
	{"port 21 ftp default", "example.com:21", "ftp://example.com/", true},
	{"port leading zero in url", "localhost:8080", "http://localhost:08080/", true},
	{"port out of range in url", "example.com:8080", "http://example.com:99999/", false},
	{"port empty in url is default", "example.com:80", "http://example.com:/", true},
	{"scheme and port", "https://example.com:8443", "https://example.com:8443/", true},
	{"scheme and port, scheme miss", "https://example.com:8443", "http://example.com:8443/", false},
	{"wildcard and port", "*.example.com:8080", "http://a.example.com:8080/", true},

	// IP addresses.
	{"ipv6 port", "[::1]:8080", "http://[::1]:8080/", true},
	{"ipv6 port miss", "[::1]:8080", "http://[::1]/", false},
	{"ipv6 canonical", "[::1]:8080", "http://[0:0::1]:8080/", true},
	{"ipv6 brackets", "[::1]", "http://[::1]:9/", true},
	{"ipv6 bare", "::1", "http://[::1]/", true},
	{"ipv6 upper", "[2001:DB8::1]", "http://[2001:db8::1]/", true},
	{"ipv6 other", "[::1]", "http://[::2]/", false},
	{"mapped pattern", "::ffff:127.0.0.2", "http://127.0.0.2/", true},
	{"mapped url", "127.0.0.2", "http://[::ffff:127.0.0.2]/", true},
	{"mapped url hex", "127.0.0.2", "http://[::ffff:7f00:2]/", true},
	{"mapped with port", "[::ffff:127.0.0.2]:8080", "http://127.0.0.2:8080/", true},
	{"mapped other address", "127.0.0.2", "http://[::ffff:127.0.0.3]/", false},
	{"ipv4", "127.0.0.1", "http://127.0.0.1:5000/", true},
	{"ipv4 other", "127.0.0.1", "http://127.0.0.2/", false},
	{"ipv4 has no www", "127.0.0.1", "http://www.127.0.0.1/", false},
	{"ipv4 hex", "127.0.0.1", "http://0x7f.0.0.1/", true},
	{"ipv4 short", "127.0.0.1", "http://127.1/", true},
	{"ipv4 decimal", "127.0.0.1", "http://2130706433/", true},
	{"ipv4 octal", "127.0.0.1", "http://0177.0.0.1/", true},
	{"ipv4 pattern short", "127.1", "http://127.0.0.1/", true},
	{"numeric name is not an ip", "123.com", "http://123.com/", true},

	// Trailing dots: one is dropped on either side.
	{"url trailing dot", "localhost", "http://localhost./", true},
	{"pattern trailing dot", "localhost.", "http://localhost/", true},
	{"www trailing dot", "example.com", "https://www.example.com./", true},
	{"wildcard trailing dot", "*.example.com", "https://a.example.com./", true},
	{"glob trailing dot", "shop-*.example.com.", "https://shop-eu.example.com/", true},
	{"two trailing dots", "example.com", "https://example.com../", false},

	// Trailing slash, spaces and case.
	{"pattern trailing slash", "example.com/", "https://example.com/", true},
	{"pattern scheme and slash", "https://example.com/", "https://example.com/a", true},
	{"pattern spaces and case", "  Example.COM  ", "HTTPS://WWW.EXAMPLE.com/", true},
	{"url upper host", "example.com", "https://EXAMPLE.COM/", true},

	// Internationalised names: Unicode and punycode are one name.
	{"idn unicode pattern", "bücher.example", "http://xn--bcher-kva.example/", true},
	{"idn punycode pattern", "xn--bcher-kva.example", "http://bücher.example/", true},
	{"idn unicode both", "bücher.example", "http://bücher.example/", true},
	{"idn upper", "BÜCHER.example", "http://xn--bcher-kva.example/", true},
	{"idn upper punycode url", "bücher.example", "http://XN--BCHER-KVA.example/", true},
	{"idn percent encoded url", "bücher.example", "http://b%C3%BCcher.example/", true},
	{"idn www", "bücher.example", "http://www.xn--bcher-kva.example/", true},
	{"idn wildcard", "*.bücher.example", "http://shop.xn--bcher-kva.example/", true},
	{"idn glob other label", "shop-*.bücher.example", "http://shop-1.xn--bcher-kva.example/", true},
	{"idn glob in unicode label", "bü*.example", "http://xn--bcher-kva.example/", true},
	{"idn glob in unicode label miss", "bü*.example", "http://xn--bcher-kva.other/", false},
	{"idn not ascii lookalike", "bücher.example", "http://bucher.example/", false},
	{"idn non-transitional", "faß.de", "http://xn--fa-hia.de/", true},
	{"idn non-transitional not ss", "faß.de", "http://fass.de/", false},
	{"idn full-width", "example.com", "https://ｅｘａｍｐｌｅ.com/", true},

	// blob: URLs are judged by the origin inside them.
	{"blob", "example.com", "blob:https://example.com/0b9c", true},
	{"blob scheme", "https://example.com", "blob:https://example.com/0b9c", true},
	{"blob scheme miss", "http://example.com", "blob:https://example.com/0b9c", false},
	{"blob default port", "example.com:443", "blob:https://example.com/0b9c", true},
	{"blob other origin", "example.com", "blob:https://evil.test/0b9c", false},
	{"blob without origin", "*", "blob:nothing", false},
	{"blob in blob", "*", "blob:blob:https://example.com/0b9c", false},
	{"blob with authority", "example.com", "blob://example.com/0b9c", false},
	{"blob pattern scheme never", "blob://example.com", "blob:https://example.com/0b9c", false},

	// Unparsable URLs match nothing; browser clean-up is applied first.
	{"bad url", "example.com", "::bad", false},
	{"bad url star", "*", "::bad", false},
	{"url space in host", "*", "http://exa mple.com/", false},
	{"url open bracket", "*", "http://[::1/", false},
	{"url bad escape in path", "*", "http://example.com/%zz", true}, // Chromium loads it
	{"url bad escape in host", "*", "http://exa%zzmple.com/", false},
	{"empty url", "*", "", false},
	{"url surrounding spaces", "example.com", "  https://example.com/ \n", true},
	{"url tab in host", "example.com", "https://exa\tmple.com/", true},
	{"url leading control", "example.com", "\x00https://example.com/", true},

	// Spellings Chromium reads as the same host.
	{"url no slashes", "evil.test", "http:evil.test", true},
	{"url one slash", "evil.test", "http:/evil.test/", true},
	{"url backslashes", "evil.test", `http:\\evil.test\x`, true},
	{"url mixed slashes", "evil.test", `https:/\evil.test/`, true},
	{"url backslash ends the authority", "evil.test", `http://evil.test\@good.test/`, true},
	{"url backslash ends the authority, not userinfo", "good.test", `http://evil.test\@good.test/`, false},
	{"url percent-encoded dot", "evil.test", "http://evil%2Etest/", true},
	{"url percent-encoded letter", "evil.test", "http://%65VIL.test/", true},
	{"url percent-encoded ideographic dot", "evil.test", "http://evil%E3%80%82test/", true},
	{"url ideographic full stop", "evil.test", "http://evil\u3002test/", true},
	{"url full-width full stop", "evil.test", "http://evil\uff0etest/", true},
	{"url halfwidth ideographic full stop", "evil.test", "http://evil\uff61test/", true},
	{"url soft hyphen ignored", "evil.test", "http://ev\u00adil.test/", true},
	{"url capital sharp s is ss", "ss.de", "http://\u1e9e.de/", true},
	{"pattern capital sharp s is ss", "\u1e9e.de", "http://ss.de/", true},
	{"url capital sharp s is not sharp s", "\u00df.de", "http://\u1e9e.de/", false},
	{"url userinfo with a space", "example.com", "http://a b@example.com/", true},
	{"url userinfo last at", "example.com", "http://a@b@example.com/", true},
	{"url control in path", "example.com", "http://example.com/a\x01b", true},
	{"url explicit default port", "example.com:80", "http://example.com:80/", true},
	{"url explicit default port with zeros", "example.com:80", "http://example.com:0080/", true},
	{"url ipv4 percent-encoded dot", "127.0.0.1", "http://127%2E0.0.1/", true},
	{"url ipv4 full-width", "127.0.0.1", "http://\uff11\uff12\uff17\u3002\uff10.0.1/", true},
	{"url ipv4 two parts", "127.0.0.1", "http://127.1/", true},
	{"url ipv4 three parts", "127.0.0.1", "http://127.0.1/", true},
	{"url ipv4-mapped expanded", "127.0.0.1", "http://[0:0:0:0:0:ffff:7f00:1]/", true},
	{"url invalid ipv4", "*", "http://256.0.0.1/", false},
	{"url too many ipv4 parts", "*", "http://1.2.3.4.5/", false},
	{"url ipv6 zone", "*", "http://[fe80::1%25eth0]/", false},
	{"url forbidden host character after decoding", "*", "http://a%2Fb.test/", false},
	{"url invalid punycode", "*", "http://xn--zz.example/", false},
	{"url port too large", "*", "http://example.com:65536/", false},

	// Invalid patterns match nothing through Match.
	{"bad pattern", "exa mple.com", "https://exa mple.com/", false},
	{"empty pattern", "", "https://example.com/", false},
}

func TestMatch(t *testing.T) {
	for _, c := range matchCases {
		t.Run(c.name, func(t *testing.T) {
			if got := Match(c.pattern, c.url); got != c.want {
				t.Fatalf("Match(%q, %q) = %v, want %v", c.pattern, c.url, got, c.want)
			}
			p, err := Parse(c.pattern)
			if err != nil {
				if c.want {
					t.Fatalf("Parse(%q): %v", c.pattern, err)
				}
				return
			}
			if got := p.MatchURL(c.url); got != c.want {
				t.Fatalf("Parse(%q).MatchURL(%q) = %v, want %v", c.pattern, c.url, got, c.want)
			}
			// Pattern.Match must agree wherever url.Parse reads the URL as
			// ParseURL does.
			if u, err := url.Parse(c.url); err == nil && sameTarget(u, c.url) {
				if got := p.Match(u); got != c.want {
					t.Fatalf("Parse(%q).Match(%q) = %v, want %v", c.pattern, c.url, got, c.want)
				}
				if _, got := MatchAny([]Pattern{{}, p}, u); got != c.want {
					t.Fatalf("MatchAny(%q, %q) = %v, want %v", c.pattern, c.url, got, c.want)
				}
			}
		})
	}
}

// sameTarget reports whether u, from url.Parse(rawURL), has the scheme, host
// and port that ParseURL reads in rawURL.
func sameTarget(u *url.URL, rawURL string) bool {
	v, err := ParseURL(rawURL)
	if err != nil {
		return false
	}
	return u.Scheme == v.Scheme && NormalizeHost(u.Hostname()) == NormalizeHost(v.Hostname()) &&
		(u.Port() == v.Port() || v.Port() == "" && u.Port() == strconv.Itoa(defaultPort(v.Scheme)))
}

func TestParseErrors(t *testing.T) {
	for _, s := range []string{
		"",
		"   ",
		"https://",
		"https:///",
		"://example.com",
		"1http://example.com",
		"ht tp://example.com",
		"*://example.com",
		"exa mple.com",
		"example.com/path",
		"example.com//",
		"user@example.com",
		"example.com?q#x",
		".example.com",
		"example..com",
		"*.",
		"*..example.com",
		"\\.example.com",
		"example.com:",
		"example.com:0",
		"example.com:65536",
		"example.com:123456",
		"example.com:80a",
		"example.com:-1",
		"example.com:8080:9090",
		"*.example.com:http",
		"[::1",
		"[::1]x",
		"[::1]:",
		"[::1]:99999",
		"1::2::3",
		"a:b:c",
		"shop-[.example.com",
		"shop-[a-.example.com",
		"shop-*.exa mple.com",
		"shop-*!.example.com",
		"xn--bcher-kva.ex\u00a0ample",
		"a\u200d.example", // a joiner outside its context is not a valid name
	} {
		p, err := Parse(s)
		if !errors.Is(err, ErrInvalidPattern) {
			t.Errorf("Parse(%q) = %v, want an error wrapping ErrInvalidPattern", s, err)
			continue
		}
		if p != (Pattern{}) {
			t.Errorf("Parse(%q) returned a non-zero Pattern with its error", s)
		}
		if !strings.Contains(err.Error(), "urlmatch: invalid pattern") {
			t.Errorf("Parse(%q) error %q does not say what failed", s, err)
		}
	}
}

func TestParseValid(t *testing.T) {
	for _, s := range []string{
		"*", " example.com ", "*.example.com", "shop-*.example.com", "https://*",
		"*:8080", "[::1]:8080", "::1", "127.0.0.1", "bücher.example",
		"xn--bcher-kva.example", "example.com:65535", "example.com:1",
		"chrome-extension://abc", "localhost.", "example.com/",
	} {
		p, err := Parse(s)
		if err != nil {
			t.Errorf("Parse(%q): %v", s, err)
			continue
		}
		if p.String() != s {
			t.Errorf("Parse(%q).String() = %q, want the pattern as given", s, p.String())
		}
	}
}

func TestZeroPattern(t *testing.T) {
	var p Pattern
	u, _ := url.Parse("https://example.com/")
	if p.Match(u) || p.MatchURL("https://example.com/") || p.MatchHost("example.com") {
		t.Fatal("the zero Pattern matched")
	}
	if p.String() != "" {
		t.Fatalf("zero Pattern String() = %q", p.String())
	}
	if p.Match(nil) {
		t.Fatal("a nil URL matched")
	}
}

func TestMatchHost(t *testing.T) {
	for _, c := range []struct {
		pattern, host string
		want          bool
	}{
		{"example.com", "example.com", true},
		{"example.com", "WWW.Example.COM.", true},
		{"example.com", "shop.example.com", false},
		{"*.example.com", "a.b.example.com", true},
		{"shop-*.example.com", "shop-eu.example.com", true},
		{"bücher.example", "xn--bcher-kva.example", true},
		{"[::1]", "[::1]", true},
		{"::1", "::1", true},
		{"127.0.0.2", "[::ffff:127.0.0.2]", true},
		{"*", "anything", true},
		{"*", "", false},
		{"example.com", "", false},
		{"example.com", "example.com:443", false}, // a host, not a host:port
		{"https://example.com", "example.com", false},
		{"example.com:443", "example.com", false},
		{"https://*", "example.com", false},
	} {
		p, err := Parse(c.pattern)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.pattern, err)
		}
		if got := p.MatchHost(c.host); got != c.want {
			t.Errorf("Parse(%q).MatchHost(%q) = %v, want %v", c.pattern, c.host, got, c.want)
		}
	}
}

func TestMatchAny(t *testing.T) {
	var ps []Pattern
	for _, s := range []string{"evil.test", "*.example.com", "example.com"} {
		p, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	u, _ := url.Parse("https://example.com/")
	if p, ok := MatchAny(ps, u); !ok || p.String() != "*.example.com" {
		t.Fatalf("MatchAny = %q, %v; want the first match, *.example.com", p, ok)
	}
	u, _ = url.Parse("https://example.org/")
	if p, ok := MatchAny(ps, u); ok || p != (Pattern{}) {
		t.Fatalf("MatchAny = %q, %v; want no match", p, ok)
	}
	if _, ok := MatchAny(ps, nil); ok {
		t.Fatal("MatchAny matched a nil URL")
	}
	if _, ok := MatchAny(nil, u); ok {
		t.Fatal("MatchAny matched with no patterns")
	}
	u, _ = url.Parse("about:blank")
	if _, ok := MatchAny(ps, u); ok {
		t.Fatal("MatchAny matched a URL without a host")
	}
}

func TestNormalizeHost(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"Example.COM", "example.com"},
		{"example.com.", "example.com"},
		{"example.com..", "example.com."},
		{"localhost.", "localhost"},
		{"bücher.example", "xn--bcher-kva.example"},
		{"BÜCHER.example.", "xn--bcher-kva.example"},
		{"xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"ｅｘａｍｐｌｅ。com", "example.com"},
		{"[::1]", "::1"},
		{"::1", "::1"},
		{"[2001:DB8:0::1]", "2001:db8::1"},
		{"::ffff:127.0.0.2", "127.0.0.2"},
		{"[::ffff:7f00:2]", "127.0.0.2"},
		{"127.0.0.1", "127.0.0.1"},
		{"127.0.0.1.", "127.0.0.1"},
		{"0x7F.1", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"0x", "0.0.0.0"},
		{"１２７.０.０.１", "127.0.0.1"},
		{"256.0.0.1", "256.0.0.1"},   // not an address; left as a name
		{"1.2.3.4.5", "1.2.3.4.5"},   // too many parts
		{"4294967296", "4294967296"}, // more than 32 bits
		{"123.com", "123.com"},       // a name ending in a letter
		{"0x1g", "0x1g"},             // not hex
		{"[::1", "[::1"},             // unbalanced: left alone
		{"xn--zz.example", "xn--zz.example"},
		{"a\u200d.example", "a\u200d.example"},             // not a valid IDN: lower-cased only
		{"\u1e9e.de", "ss.de"},                             // UTS #46 maps capital sharp s to "ss", not to "ß"
		{"A\u200d\u00dc.example", "a\u200d\u00fc.example"}, // invalid: still lower-cased
	} {
		if got := NormalizeHost(c.in); got != c.want {
			t.Errorf("NormalizeHost(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzMatch checks that no input panics and that Match is exactly Parse
// followed by MatchURL.
func FuzzMatch(f *testing.F) {
	for _, c := range matchCases {
		f.Add(c.pattern, c.url)
	}
	f.Add("[::ffff:1.2.3.4]:0", "blob:ws://[::ffff:1.2.3.4]:0/")
	f.Add("*.[a-", "http://0x.0x.0x.0x/")
	f.Add("bü*.xn--", "http://xn--/")
	f.Fuzz(func(t *testing.T, pattern, rawURL string) {
		got := Match(pattern, rawURL)
		p, err := Parse(pattern)
		if err != nil {
			if !errors.Is(err, ErrInvalidPattern) {
				t.Fatalf("Parse(%q) = %v, not an ErrInvalidPattern", pattern, err)
			}
			if got {
				t.Fatalf("Match(%q, %q) is true for an invalid pattern", pattern, rawURL)
			}
			return
		}
		if want := p.MatchURL(rawURL); got != want {
			t.Fatalf("Match(%q, %q) = %v, Parse+MatchURL = %v", pattern, rawURL, got, want)
		}
		if p.String() != pattern {
			t.Fatalf("Parse(%q).String() = %q", pattern, p.String())
		}
		p.MatchHost(rawURL)
		NormalizeHost(rawURL)
		if u, err := url.Parse(rawURL); err == nil {
			p.Match(u)
			MatchAny([]Pattern{p}, u)
		}
	})
}

func TestHost(t *testing.T) {
	for raw, want := range map[string]string{
		"https://WWW.Example.COM./a":           "www.example.com",
		"http://[::ffff:7f00:2]:8080/":         "127.0.0.2",
		"http://0x7f.1/":                       "127.0.0.1",
		"http://bücher.example/":               "xn--bcher-kva.example",
		"blob:https://shop.test/4f1c":          "shop.test",
		"  http:\\\\evil.test\\x":              "evil.test",
		"data:text/plain,hi":                   "",
		"about:blank":                          "",
		"http://[::1":                          "",
		"wss://tracker.example:443/socket?x=1": "tracker.example",
	} {
		if got := Host(raw); got != want {
			t.Errorf("Host(%q) = %q, want %q", raw, got, want)
		}
	}
}
