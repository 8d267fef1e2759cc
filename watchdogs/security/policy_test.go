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
		{"no host", DomainPolicy{}, "http:///path", false},
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
