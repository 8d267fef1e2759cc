package watchdogs

import (
	"context"
	"errors"
	"testing"
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

func TestMatchDomain(t *testing.T) {
	if !MatchDomain("*.example.com", "https://x.example.com/p") {
		t.Fatal("wildcard should match subdomain")
	}
	if MatchDomain("example.com", "https://example.org/") {
		t.Fatal("different domain matched")
	}
	if MatchDomain("example.com", "::bad") {
		t.Fatal("bad url matched")
	}
}
