package security

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/urlmatch"
)

func TestDomainPolicy(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		policy DomainPolicy
		url    string
		allow  bool
	}{
		{"http allowed by default", DomainPolicy{}, "https://example.com/a", true},
		{"about:blank always", DomainPolicy{Allowed: []string{"example.com"}}, "about:blank", true},
		{"data refused by default", DomainPolicy{}, "data:text/html,<script>location='https://evil.test'</script>", false},
		{"data allowed when named", DomainPolicy{AllowedSchemes: []string{"data"}}, "data:text/html,hi", true},
		{"javascript refused", DomainPolicy{}, "javascript:alert(1)", false},
		{"file refused", DomainPolicy{}, "file:///etc/passwd", false},
		{"chrome settings refused", DomainPolicy{}, "chrome://settings", false},
		{"blob judged by inner origin: allowed", DomainPolicy{Allowed: []string{"example.com"}}, "blob:https://example.com/0b9c", true},
		{"blob judged by inner origin: refused", DomainPolicy{Allowed: []string{"example.com"}}, "blob:https://evil.test/0b9c", false},
		{"blob without origin", DomainPolicy{}, "blob:nothing", false},
		{"exact plus www", DomainPolicy{Allowed: []string{"example.com"}}, "https://www.example.com/", true},
		{"exact does not cover subdomain", DomainPolicy{Allowed: []string{"example.com"}}, "https://shop.example.com/", false},
		{"wildcard covers subdomain", DomainPolicy{Allowed: []string{"*.example.com"}}, "https://a.b.example.com/", true},
		{"wildcard covers apex", DomainPolicy{Allowed: []string{"*.example.com"}}, "https://example.com/", true},
		{"wildcard is not a suffix trick", DomainPolicy{Allowed: []string{"*.example.com"}}, "https://evilexample.com/", false},
		{"scheme restricted", DomainPolicy{Allowed: []string{"https://example.com"}}, "http://example.com/", false},
		{"port restricted match", DomainPolicy{Allowed: []string{"localhost:8080"}}, "http://localhost:8080/x", true},
		{"port restricted miss", DomainPolicy{Allowed: []string{"localhost:8080"}}, "http://localhost:9090/x", false},
		{"prohibited wins over allowed", DomainPolicy{Allowed: []string{"*.example.com"}, Prohibited: []string{"admin.example.com"}}, "https://admin.example.com/", false},
		{"prohibited alone", DomainPolicy{Prohibited: []string{"evil.test"}}, "https://evil.test/", false},
		{"glob", DomainPolicy{Allowed: []string{"shop-*.example.com"}}, "https://shop-eu.example.com/", true},
		{"ip blocked dotted", DomainPolicy{BlockIPAddresses: true}, "http://127.0.0.1:8080/", false},
		{"ip blocked decimal", DomainPolicy{BlockIPAddresses: true}, "http://2130706433/", false},
		{"ip blocked hex", DomainPolicy{BlockIPAddresses: true}, "http://0x7f.0.0.1/", false},
		{"ip blocked v6", DomainPolicy{BlockIPAddresses: true}, "http://[::1]/", false},
		{"numeric-looking domain is not an ip", DomainPolicy{BlockIPAddresses: true}, "http://123.com/", true},
		{"empty url", DomainPolicy{}, "", false},
		{"no host", DomainPolicy{}, "http:///", false},
		{"three slashes read as chromium reads them", DomainPolicy{Prohibited: []string{"path"}}, "http:///path", false},
		{"case insensitive", DomainPolicy{Allowed: []string{"Example.COM"}}, "HTTPS://EXAMPLE.com/", true},
		// Hosts are compared as urlmatch normalises them.
		{"trailing dot allowed", DomainPolicy{Allowed: []string{"example.com"}}, "https://example.com./", true},
		{"trailing dot prohibited", DomainPolicy{Prohibited: []string{"evil.test"}}, "https://EVIL.test./", false},
		{"punycode prohibited by unicode pattern", DomainPolicy{Prohibited: []string{"bücher.example"}}, "https://xn--bcher-kva.example/", false},
		{"unicode host prohibited by punycode pattern", DomainPolicy{Prohibited: []string{"xn--bcher-kva.example"}}, "https://bücher.example/", false},
		{"numeric ip form prohibited", DomainPolicy{Prohibited: []string{"127.0.0.1"}}, "http://2130706433/", false},
		{"ipv4-mapped ipv6 prohibited", DomainPolicy{Prohibited: []string{"127.0.0.1"}}, "http://[::ffff:127.0.0.1]/", false},
		{"ip blocked octal", DomainPolicy{BlockIPAddresses: true}, "http://0177.0.0.1/", false},
		{"ip blocked short form", DomainPolicy{BlockIPAddresses: true}, "http://127.1/", false},
		{"ip blocked ipv4-mapped", DomainPolicy{BlockIPAddresses: true}, "http://[::ffff:7f00:1]/", false},
		{"ip blocked trailing dot", DomainPolicy{BlockIPAddresses: true}, "http://127.0.0.1./", false},
		{"invalid ipv4 is not a name", DomainPolicy{BlockIPAddresses: true}, "http://256.0.0.1/", false},
		// A URL urlmatch cannot read must be refused, not let through a
		// block list as "no match".
		{"unparsable host with a block list", DomainPolicy{Prohibited: []string{"evil.test"}}, "http://ex ample.com/", false},
		{"escaped host with a block list", DomainPolicy{Prohibited: []string{"evil.test"}}, "http://%65vil.test/", false},
		{"no slashes with a block list", DomainPolicy{Prohibited: []string{"evil.test"}}, "http:evil.test", false},
		{"blob in blob", DomainPolicy{}, "blob:blob:https://example.com/x", false},
		{"blob of a prohibited origin", DomainPolicy{Prohibited: []string{"evil.test"}}, "blob:https://evil.test/0b9c", false},
		// Cleaned as a browser cleans typed text.
		{"tab inside a javascript url", DomainPolicy{}, "java\tscript:alert(1)", false},
		{"surrounding spaces", DomainPolicy{Allowed: []string{"example.com"}}, "  https://example.com/  ", true},
		{"data scheme named with a colon", DomainPolicy{AllowedSchemes: []string{"data:"}}, "data:text/html,hi", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.policy.CheckURL(ctx, URLRequest{URL: c.url, Kind: KindNavigate})
			if c.allow && err != nil {
				t.Fatalf("CheckURL(%q) = %v, want allowed", c.url, err)
			}
			if !c.allow {
				if err == nil {
					t.Fatalf("CheckURL(%q) allowed, want blocked", c.url)
				}
				var be *BlockedURLError
				if !errors.Is(err, ErrURLBlocked) || !errors.As(err, &be) || be.Reason == "" {
					t.Fatalf("CheckURL(%q) = %v, want a *BlockedURLError with a reason", c.url, err)
				}
			}
		})
	}
}

func TestDomainPolicyValidate(t *testing.T) {
	if err := (&DomainPolicy{Allowed: []string{"*.example.com", "https://a.test:8443"}, Prohibited: []string{"evil.test"}}).Validate(); err != nil {
		t.Fatalf("valid policy: %v", err)
	}
	p := &DomainPolicy{Allowed: []string{"example.com", "exa mple.com"}, Prohibited: []string{"evil.test", ""}}
	err := p.Validate()
	if !errors.Is(err, urlmatch.ErrInvalidPattern) {
		t.Fatalf("Validate = %v, want urlmatch.ErrInvalidPattern", err)
	}
	var pe *PatternError
	if !errors.As(err, &pe) || pe.List != "Allowed" || pe.Index != 1 || pe.Pattern != "exa mple.com" {
		t.Fatalf("first PatternError = %+v", pe)
	}
	for _, want := range []string{"Allowed[1]", `"exa mple.com"`, "Prohibited[1]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %q does not mention %s", err, want)
		}
	}
}

// A policy with an invalid pattern refuses everything but the blank pages
// rather than treating the pattern as matching nothing.
func TestDomainPolicyInvalidPatternFailsClosed(t *testing.T) {
	ctx := context.Background()
	for _, p := range []*DomainPolicy{
		{Prohibited: []string{"evil.test:http"}},
		{Allowed: []string{"example.com", "bad/path"}},
	} {
		err := p.CheckURL(ctx, URLRequest{URL: "https://example.com/", Kind: KindNavigate})
		var be *BlockedURLError
		if !errors.As(err, &be) || !strings.Contains(be.Reason, "invalid domain pattern") {
			t.Errorf("%+v: CheckURL = %v, want a refusal naming the invalid pattern", p, err)
		}
		if err := p.CheckURL(ctx, URLRequest{URL: "about:blank", Kind: KindNavigate}); err != nil {
			t.Errorf("%+v: about:blank refused: %v", p, err)
		}
	}
}

func TestIsIPHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "2130706433": true, "0x7f.0.0.1": true, "0177.0.0.1": true, "127.1": true,
		"0x7f000001": true, "::1": true, "[::1]": true, "::ffff:127.0.0.1": true, "256.0.0.1": true,
		"1.2.3.4.5": true, "127.0.0.1.": true, "１２７.0.0.1": true,
		"123.com": false, "example.com": false, "localhost": false, "0x.example": false, "1.2.3.com": false,
	} {
		if got := isIPHost(urlmatch.NormalizeHost(host)); got != want {
			t.Errorf("isIPHost(NormalizeHost(%q) = %q) = %v, want %v", host, urlmatch.NormalizeHost(host), got, want)
		}
	}
}

// spellings lists, for one host, URLs that Chromium loads from that host.
var spellings = []struct {
	name    string
	pattern string // the host as a pattern
	urls    []string
}{
	{"trailing dot", "localhost", []string{
		"http://localhost/x", "http://localhost.:8080/x", "http://LOCALHOST./", "http://user@localhost./",
	}},
	{"ipv4-mapped ipv6", "127.0.0.2", []string{
		"http://127.0.0.2/", "http://[::ffff:127.0.0.2]:8080/", "http://[::ffff:7f00:2]/",
		"http://[0:0:0:0:0:ffff:127.0.0.2]/", "http://[::FFFF:7F00:2]:80/",
	}},
	{"ipv4 notations", "127.0.0.2", []string{
		"http://127.0.0.2./", "http://2130706434/", "http://0x7f000002/", "http://0177.0.0.2/",
		"http://127.2/", "http://127.0.2/", "http://0x7f.0x0.0x0.0x2/", "http://017700000002/",
		"http://127%2E0.0.2/", "http://\uff11\uff12\uff17.0.0.2/", "http://127\u30020.0.2/",
	}},
	{"ipv4-mapped pattern", "[::ffff:127.0.0.2]", []string{"http://127.0.0.2/", "http://[::ffff:7f00:2]/"}},
	{"unicode pattern, punycode url", "bücher.example", []string{
		"http://xn--bcher-kva.example/", "http://XN--BCHER-KVA.example./", "http://b%C3%BCcher.example/",
		"http://www.xn--bcher-kva.example/",
	}},
	{"punycode pattern, unicode url", "xn--bcher-kva.example", []string{
		"http://bücher.example/", "http://BÜCHER.example/", "http://b\uff55\u0308cher.example/",
	}},
	{"capital sharp s is ss", "ss.de", []string{"http://ss.de/", "http://\u1e9e.de/", "http://SS.de/"}},
	{"url spellings", "blocked.test", []string{
		"http://blocked.test/", "http://blocked.test:80/", "https://blocked.test:443/", "http://blocked.test:0080/",
		"http://user@blocked.test/", "http://user:pw@BLOCKED.test/", "http://a@b@blocked.test/",
		"http://BLOCKED.test", "http://blocked%2Etest/", "http://blocked%2etest/", "http://%62locked.test/",
		"http://blocked\u3002test/", "http://blocked\uff0etest/", "http://blocked\uff61test/",
		"http://\uff42\uff4c\uff4f\uff43\uff4b\uff45\uff44.test/", "http://blo\u00adcked.test/",
		`http:\\blocked.test\x`, `http:/\blocked.test/`, "http:blocked.test", "http:/blocked.test",
		"http:///blocked.test/", " \x01http://blocked.test/ \x00", "http://bloc\tked.test/",
		`http://blocked.test\@other.test/`, "blob:http://blocked.test/0b9c", "ws://blocked.test:80/",
	}},
}

// Every spelling of a host gets one decision: refused by a block list that
// names the host, allowed by an allow list that names it.
func TestDomainPolicyOneHostOneDecision(t *testing.T) {
	ctx := context.Background()
	for _, s := range spellings {
		for _, u := range s.urls {
			p := DomainPolicy{Prohibited: []string{s.pattern}, AllowedSchemes: []string{"ws"}}
			if err := p.CheckURL(ctx, URLRequest{URL: u, Kind: KindNavigate}); err == nil {
				t.Errorf("%s: Prohibited %q allowed %q", s.name, s.pattern, u)
			}
			p = DomainPolicy{Allowed: []string{s.pattern}, AllowedSchemes: []string{"ws"}}
			if err := p.CheckURL(ctx, URLRequest{URL: u, Kind: KindNavigate}); err != nil {
				t.Errorf("%s: Allowed %q refused %q: %v", s.name, s.pattern, u, err)
			}
		}
	}
}

func TestDomainPolicyListSemantics(t *testing.T) {
	ctx := context.Background()
	corp := DomainPolicy{Allowed: []string{"*.corp.test"}, Prohibited: []string{"secret.corp.test"}}
	cases := []struct {
		name   string
		policy DomainPolicy
		url    string
		allow  bool
	}{
		// A prohibited pattern covers the subdomains of what it matches.
		{"prohibited covers a subdomain", corp, "http://x.secret.corp.test/", false},
		{"prohibited covers a deep subdomain", corp, "https://a.b.secret.corp.test/", false},
		{"prohibited covers itself", corp, "http://secret.corp.test/", false},
		{"prohibited covers www", corp, "http://www.secret.corp.test/", false},
		{"prohibited subdomain in a blob", corp, "blob:https://x.secret.corp.test/0b9c", false},
		{"prohibited subdomain spelled otherwise", corp, "http://X.SECRET%2Ecorp.test.:80/", false},
		{"prohibited is not a suffix trick", corp, "http://notsecret.corp.test/", true},
		{"prohibited leaves siblings", corp, "http://public.corp.test/", true},
		{"prohibited leaves the parent", corp, "http://corp.test/", true},
		{"prohibited unicode covers subdomains", DomainPolicy{Prohibited: []string{"bücher.example"}}, "http://shop.xn--bcher-kva.example/", false},
		{"prohibited glob covers subdomains", DomainPolicy{Prohibited: []string{"shop-*.example.com"}}, "https://a.shop-eu.example.com/", false},
		{"prohibited glob still a glob", DomainPolicy{Prohibited: []string{"shop-*.example.com"}}, "https://shop.example.com/", true},
		{"prohibited scheme applies to subdomains", DomainPolicy{Prohibited: []string{"https://secret.test"}}, "https://x.secret.test/", false},
		{"prohibited scheme restriction kept", DomainPolicy{Prohibited: []string{"https://secret.test"}}, "http://x.secret.test/", true},
		{"prohibited port applies to subdomains", DomainPolicy{Prohibited: []string{"secret.test:8443"}}, "https://x.secret.test:8443/", false},
		{"prohibited port restriction kept", DomainPolicy{Prohibited: []string{"secret.test:8443"}}, "https://x.secret.test/", true},
		{"prohibited default port explicit", DomainPolicy{Prohibited: []string{"secret.test:443"}}, "https://x.secret.test:443/", false},
		{"prohibited ip has no parents", DomainPolicy{Prohibited: []string{"0.0.1"}}, "http://127.0.0.1/", true},
		{"prohibited ip", DomainPolicy{Prohibited: []string{"0.0.1"}}, "http://0.0.0.1/", false},
		// Allowed keeps its meaning: a bare name is the name and www.
		{"allowed bare name", DomainPolicy{Allowed: []string{"corp.test"}}, "http://corp.test/", true},
		{"allowed bare name www", DomainPolicy{Allowed: []string{"corp.test"}}, "http://www.corp.test/", true},
		{"allowed bare name no other subdomain", DomainPolicy{Allowed: []string{"corp.test"}}, "http://x.corp.test/", false},
		{"allowed bare name no other subdomain spelled otherwise", DomainPolicy{Allowed: []string{"corp.test"}}, "http://x%2Ecorp.test/", false},
		{"allowed wildcard apex", DomainPolicy{Allowed: []string{"*.corp.test"}}, "http://corp.test./", true},
		{"allowed wildcard deep", DomainPolicy{Allowed: []string{"*.corp.test"}}, "http://a.b.corp.test/", true},
		// A default port named or not decides the same.
		{"allowed port 80 implicit", DomainPolicy{Allowed: []string{"http://example.com:80"}}, "http://example.com/", true},
		{"allowed port 80 explicit", DomainPolicy{Allowed: []string{"http://example.com:80"}}, "http://example.com:80/", true},
		{"prohibited port 443 implicit", DomainPolicy{Prohibited: []string{"example.com:443"}}, "https://example.com/", false},
		{"prohibited port 443 explicit", DomainPolicy{Prohibited: []string{"example.com:443"}}, "https://example.com:443/", false},
		// Userinfo is not the host.
		{"userinfo names the allowed host", DomainPolicy{Allowed: []string{"good.test"}}, "http://good.test@evil.test/", false},
		{"backslash ends the authority", DomainPolicy{Allowed: []string{"good.test"}}, `http://evil.test\@good.test/`, false},
		// Hosts Chromium cannot reach as named are refused, not let through.
		{"two trailing dots", DomainPolicy{Prohibited: []string{"blocked.test"}}, "http://blocked.test../", false},
		{"leading dot", DomainPolicy{Prohibited: []string{"blocked.test"}}, "http://.blocked.test/", false},
		{"empty label", DomainPolicy{Prohibited: []string{"blocked.test"}}, "http://x..blocked.test/", false},
		{"invalid ipv4", DomainPolicy{Prohibited: []string{"blocked.test"}}, "http://256.0.0.1/", false},
		{"escaped slash in host", DomainPolicy{Prohibited: []string{"blocked.test"}}, "http://blocked.test%2F.x/", false},
		{"ipv6 zone", DomainPolicy{Prohibited: []string{"blocked.test"}}, "http://[fe80::1%25eth0]/", false},
		{"invalid punycode", DomainPolicy{Prohibited: []string{"blocked.test"}}, "http://xn--zz.test/", false},
		{"bad port", DomainPolicy{Prohibited: []string{"blocked.test"}}, "http://blocked.test:99999/", false},
		// The path is not the host; Chromium loads these.
		{"bad escape in path", DomainPolicy{Allowed: []string{"example.com"}}, "http://example.com/%zz", true},
		{"backslash path", DomainPolicy{Allowed: []string{"example.com"}}, `http:\\example.com\a\b`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.policy.CheckURL(ctx, URLRequest{URL: c.url, Kind: KindNavigate})
			if c.allow && err != nil {
				t.Fatalf("CheckURL(%q) = %v, want allowed", c.url, err)
			}
			if !c.allow && err == nil {
				t.Fatalf("CheckURL(%q) allowed, want blocked", c.url)
			}
		})
	}
}
