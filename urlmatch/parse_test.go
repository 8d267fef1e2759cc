package urlmatch

import (
	"errors"
	"net/url"
	"testing"
)

func TestParseURL(t *testing.T) {
	for _, c := range []struct{ in, scheme, host string }{
		{"http://example.com/", "http", "example.com"},
		{"HTTP://EXAMPLE.COM/", "http", "example.com"},
		{"http://example.com:80/", "http", "example.com"},
		{"http://example.com:0080/", "http", "example.com"},
		{"http://example.com:/", "http", "example.com"},
		{"https://example.com:443/", "https", "example.com"},
		{"https://example.com:80/", "https", "example.com:80"},
		{"http://example.com:08080/", "http", "example.com:8080"},
		{"ws://example.com:80/", "ws", "example.com"},
		{"wss://example.com:443/", "wss", "example.com"},
		{"ftp://example.com:21/", "ftp", "example.com"},
		{"http://localhost./", "http", "localhost."},
		{"http://user:pw@Blocked.Test/", "http", "blocked.test"},
		{"http://a@b@blocked.test/", "http", "blocked.test"},
		{"http://blocked.test@evil.test/", "http", "evil.test"},
		{`http://evil.test\@blocked.test/`, "http", "evil.test"},
		{`http:\\blocked.test\x`, "http", "blocked.test"},
		{"http:blocked.test", "http", "blocked.test"},
		{"http:///blocked.test", "http", "blocked.test"},
		{"http://blocked%2Etest/", "http", "blocked.test"},
		{"http://blocked%2etest/", "http", "blocked.test"},
		{"http://blocked%E3%80%82test/", "http", "blocked.test"},
		{"http://blocked\u3002test/", "http", "blocked.test"},
		{"http://blocked\uff0etest/", "http", "blocked.test"},
		{"http://blocked\uff61test/", "http", "blocked.test"},
		{"http://\uff42locked.test/", "http", "blocked.test"},
		{"http://b\u00adlocked.test/", "http", "blocked.test"},
		{"http://bücher.example/", "http", "xn--bcher-kva.example"},
		{"http://XN--BCHER-KVA.example/", "http", "xn--bcher-kva.example"},
		{"http://\u1e9e.de/", "http", "ss.de"},
		{"http://fa\u00df.de/", "http", "xn--fa-hia.de"},
		{"http://2130706433/", "http", "127.0.0.1"},
		{"http://0x7f.1/", "http", "127.0.0.1"},
		{"http://0177.0.1/", "http", "127.0.0.1"},
		{"http://127.0.0.1./", "http", "127.0.0.1"},
		{"http://127%2E0.0.1/", "http", "127.0.0.1"},
		{"http://\uff11\uff12\uff17.0.0.1/", "http", "127.0.0.1"},
		{"http://[::1]:80/", "http", "[::1]"},
		{"http://[0:0::1]:8080/", "http", "[::1]:8080"},
		{"http://[::FFFF:7F00:2]/", "http", "[::ffff:127.0.0.2]"},
		{" \x01http://exa\tmple.com/\n ", "http", "example.com"},
		{"http://example.com/a b\x01%zz", "http", "example.com"},
		{"http://example.com#%zz", "http", "example.com"},
		{"blob:https://example.com/x", "blob", ""},
		{"data:text/html,hi", "data", ""},
		{"chrome://settings", "chrome", "settings"},
	} {
		u, err := ParseURL(c.in)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", c.in, err)
			continue
		}
		if u.Scheme != c.scheme || u.Host != c.host {
			t.Errorf("ParseURL(%q) = scheme %q host %q, want %q %q", c.in, u.Scheme, u.Host, c.scheme, c.host)
		}
	}
}

func TestParseURLPathAndUser(t *testing.T) {
	u, err := ParseURL(`http://us er:p%zz@example.com\a\b?c\d#e\f`)
	if err != nil {
		t.Fatal(err)
	}
	if u.Path != "/a/b" || u.RawQuery != `c\d` || u.Fragment != `e\f` {
		t.Errorf("path %q query %q fragment %q: want backslashes as slashes in the path only", u.Path, u.RawQuery, u.Fragment)
	}
	if u.User.Username() != "us er" {
		t.Errorf("user %q, want %q", u.User.Username(), "us er")
	}
}

func TestParseURLErrors(t *testing.T) {
	for _, s := range []string{
		"http://",
		"http:///",
		"http://user@/",
		"http://:80/",
		"http://exa mple.com/",
		"http://exa%20mple.com/",
		"http://exa%zzmple.com/",
		"http://a%2Fb.test/",
		"http://a%00b.test/",
		"http://a%ffb.test/", // not UTF-8
		"http://a<b.test/",
		"http://a|b.test/",
		"http://a^b.test/",
		"http://\uff0f.test/", // full-width solidus maps to '/'
		"http://xn--zz.example/",
		"http://256.0.0.1/",
		"http://1.2.3.4.5/",
		"http://0x100000000/",
		"http://[::1/",
		"http://[::1]x/",
		"http://[1.2.3.4]/",
		"http://[fe80::1%25eth0]/",
		"http://::1/",
		"http://example.com:65536/",
		"http://example.com:8o/",
		"http://a:b:80/",
	} {
		u, err := ParseURL(s)
		if err == nil {
			t.Errorf("ParseURL(%q) = host %q, want an error", s, u.Host)
			continue
		}
		var ue *url.Error
		if !errors.As(err, &ue) || ue.URL != s {
			t.Errorf("ParseURL(%q) error %v is not a *url.Error naming the URL", s, err)
		}
	}
}

// FuzzParseURL checks that ParseURL never panics and that its result is a
// fixed point: parsing its String gives the same scheme, host and port.
func FuzzParseURL(f *testing.F) {
	for _, c := range matchCases {
		f.Add(c.url)
	}
	f.Add(`http:\\b%C3%BCcher%E3%80%82example:0080\x`)
	f.Add("http://[::ffff:7f00:1]:080/")
	f.Add("ws://u@%30x7f.1./")
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := ParseURL(raw)
		if err != nil {
			return
		}
		v, err := ParseURL(u.String())
		if err != nil {
			if _, special := specialDefaultPorts[u.Scheme]; special {
				t.Fatalf("ParseURL(%q) = %q, which does not parse again: %v", raw, u, err)
			}
			return
		}
		if _, special := specialDefaultPorts[u.Scheme]; special && (v.Scheme != u.Scheme || v.Host != u.Host) {
			t.Fatalf("ParseURL(%q) = %q, then %q: not a fixed point", raw, u, v)
		}
	})
}
