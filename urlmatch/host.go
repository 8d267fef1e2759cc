package urlmatch

import (
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// idnaProfile converts names as Chromium does: UTS #46 non-transitional
// ("faß.de" stays distinct from "fass.de") with the Bidi and joiner checks,
// but without the STD3 and hyphen rules, which would reject real hosts such
// as "my_host.example" and "r3---sn-abc.googlevideo.com". A Profile is
// immutable, so sharing it is safe.
var idnaProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.StrictDomainName(false),
	idna.CheckHyphens(false),
)

// NormalizeHost returns host in the form in which patterns and URLs are
// compared. host is a URL's host without its port, as [url.URL.Hostname]
// returns it; an IPv6 address may keep its brackets.
//
// The result is lower case, has no brackets and has one trailing dot
// removed. An internationalised name is in its ASCII (punycode) form,
// mapped as UTS #46 maps it (as Chromium does: "ẞ.de" is "ss.de"). An IP
// address is in canonical form: an IPv4-mapped IPv6 address becomes IPv4,
// and the numeric IPv4 spellings browsers accept ("0x7f.1", "2130706433")
// become a dotted quad. A name that is not a valid internationalised name is
// returned lower-cased but otherwise unchanged, so it can still equal
// itself. NormalizeHost("") is "".
func NormalizeHost(host string) string {
	h, _ := normalizeHost(host)
	return h
}

// normalizeHost is [NormalizeHost] that also reports whether an
// internationalised name converted cleanly, which [Parse] insists on.
func normalizeHost(host string) (string, bool) {
	h := host
	if len(h) >= 2 && h[0] == '[' && h[len(h)-1] == ']' {
		h = h[1 : len(h)-1]
	}
	if strings.Contains(h, ":") {
		if ip, err := netip.ParseAddr(h); err == nil {
			return strings.ToLower(ip.Unmap().String()), true
		}
		return strings.ToLower(h), true
	}
	// Only ASCII is lower-cased here: the UTS #46 mapping does the rest, and
	// differs from strings.ToLower ("ẞ" maps to "ss", not "ß").
	h = asciiLower(h)
	ok := true
	if !isASCII(h) {
		// Mapping may turn full-width digits and dots into ASCII ones, so the
		// dot and IPv4 steps below come after it, as in a browser.
		if a, err := idnaProfile.ToASCII(h); err == nil {
			h = a
		} else {
			h, ok = strings.ToLower(h), false
		}
	}
	h = strings.TrimSuffix(h, ".")
	if ip, isIP := parseIPv4(h); isIP {
		return ip, ok
	}
	return h, ok
}

// toUnicode returns the Unicode form of a normalised host, or the host
// itself when it has no punycode label or does not decode.
func toUnicode(host string) string {
	if !strings.Contains(host, "xn--") {
		return host
	}
	u, err := idnaProfile.ToUnicode(host)
	if err != nil {
		return host
	}
	return u
}

// parseIPv4 reads h (lower case, no trailing dot) as the WHATWG URL standard
// reads an IPv4 host, which is what Chromium navigates to: one to four dotted
// numbers, each decimal, octal (leading "0") or hex ("0x"), the last one
// filling the remaining bytes. It returns the dotted quad, or false when h is
// a name or not a valid address.
func parseIPv4(h string) (string, bool) {
	parts := strings.Split(h, ".")
	if len(parts) > 4 || !endsInNumber(parts[len(parts)-1]) {
		return "", false
	}
	var addr uint64
	for i, part := range parts {
		n, ok := parseIPv4Part(part)
		if !ok {
			return "", false
		}
		if i < len(parts)-1 {
			if n > 255 {
				return "", false
			}
			addr = addr<<8 | n
			continue
		}
		rest := uint(8 * (5 - len(parts))) // bits the last part fills
		if n >= 1<<rest {
			return "", false
		}
		addr = addr<<rest | n
	}
	return netip.AddrFrom4([4]byte{byte(addr >> 24), byte(addr >> 16), byte(addr >> 8), byte(addr)}).String(), true
}

// endsInNumber reports whether the last label makes a host an IPv4 address
// rather than a name, per the WHATWG "ends in a number" checker.
func endsInNumber(last string) bool {
	if last == "" {
		return false
	}
	if hex, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}

func parseIPv4Part(s string) (uint64, bool) {
	base := 10
	switch {
	case s == "":
		return 0, false
	case strings.HasPrefix(s, "0x"):
		base, s = 16, s[2:]
		if s == "" {
			return 0, true // "0x" alone is zero
		}
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	n, err := strconv.ParseUint(s, base, 64)
	return n, err == nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
