package security

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/idna"

	"github.com/browseragent/browseragent/urlmatch"
)

// chromiumIDNA converts names as Chromium does (UTS #46 non-transitional,
// Bidi and joiner checks, no STD3 or hyphen rules), independently of
// urlmatch, to build the Unicode and ASCII spellings of a name.
var chromiumIDNA = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.StrictDomainName(false),
	idna.CheckHyphens(false),
)

// FuzzOneHostOneDecision holds the invariant "two spellings Chromium treats
// as one host get one decision": from a label it builds a host name, from a
// uint32 an IPv4 address, writes each in the ways Chromium reads as that
// host (variant picks case flips and number bases), and checks that every
// spelling is allowed or refused alike by policies that name the host in
// their allow list, their block list, in other spellings, or block IPs.
func FuzzOneHostOneDecision(f *testing.F) {
	labels := []string{
		"example", "localhost", "secret.corp", "bücher", "xn--bcher-kva", "faß", "straße", "\u1e9e",
		"München", "日本語", "παράδειγμα", "пример", "مثال", "r3---sn-abc", "my_host", "www", "a.b.c",
		"0x7f", "127", "ǅ", "Ⅻ", "ｆｕｌｌ", "a\u00adb", "xn--zz", "", ".", "a..b",
	}
	ips := []uint32{0x7f000001, 0x7f000002, 0, 0xffffffff, 0x0a000001, 0xc0a80101, 0x01020304, 0x00000100, 0xa9fea9fe, 0x00ff00ff}
	for i, l := range labels {
		f.Add(l, ips[i%len(ips)], byte(i*37))
	}
	for i, ip := range ips {
		f.Add("example", ip, byte(0x55*i))
	}
	f.Fuzz(func(t *testing.T, label string, ip uint32, variant byte) {
		if host, uni, ok := fuzzName(label); ok {
			checkOneDecision(t, nameSpellings(label, host, uni, variant), namePolicies(host, uni))
		}
		dotted := fmt.Sprintf("%d.%d.%d.%d", byte(ip>>24), byte(ip>>16), byte(ip>>8), byte(ip))
		checkOneDecision(t, ipSpellings(ip, variant), ipPolicies(ip, dotted))
	})
}

// policyCase is a policy and its decision on the host's plain spelling.
type policyCase struct {
	policy DomainPolicy
	allow  bool
}

func checkOneDecision(t *testing.T, spellings []string, policies []policyCase) {
	t.Helper()
	ctx := context.Background()
	for _, pc := range policies {
		for _, s := range spellings {
			err := pc.policy.CheckURL(ctx, URLRequest{URL: s, Kind: KindNavigate})
			if (err == nil) != pc.allow {
				t.Errorf("policy %+v: %q allowed=%v (err %v), but %q allowed=%v",
					pc.policy, s, err == nil, err, spellings[0], pc.allow)
			}
		}
	}
}

// fuzzName turns label into a host name Chromium can load: label + ".example"
// in ASCII (host) and, when it has one that converts back, in Unicode (uni).
func fuzzName(label string) (host, uni string, ok bool) {
	if !utf8.ValidString(label) || len(label) > 64 {
		return "", "", false
	}
	host, err := chromiumIDNA.ToASCII(label + ".example")
	if err != nil || urlmatch.NormalizeHost(host) != host {
		return "", "", false
	}
	for l := range strings.SplitSeq(host, ".") {
		if l == "" || strings.Trim(l, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return "", "", false
		}
	}
	if _, err := urlmatch.Parse(host); err != nil {
		return "", "", false
	}
	if u, err := chromiumIDNA.ToUnicode(host); err == nil && u != host {
		if back, err := chromiumIDNA.ToASCII(u); err == nil && back == host {
			uni = u
		}
	}
	return host, uni, true
}

// nameSpellings writes host (label + ".example" in ASCII, uni in Unicode) in
// ways Chromium reads as host, the first one plain.
func nameSpellings(label, host, uni string, v byte) []string {
	s := []string{
		"http://" + host + "/",
		"http://" + flipCase(host, v) + "/",
		"HTTP://" + strings.ToUpper(host) + "./",
		"http://" + host + ".:80/",
		"http://" + host + ":0080/x",
		"http://user:pw@" + host + "/",
		"http://a@b@" + host + "/",
		`http:\\` + host + `\x`,
		`http:/\` + host + "/",
		"http:" + host,
		"http:///" + host,
		" \x01http://" + host + "/\n ",
		"http://" + host[:len(host)/2] + "\t" + host[len(host)/2:] + "/",
		"http://" + strings.ReplaceAll(host, ".", "\u3002") + "/",
		"http://" + strings.ReplaceAll(host, ".", "\uff0e") + "/",
		"http://" + strings.ReplaceAll(host, ".", "\uff61") + "/",
		"http://" + strings.ReplaceAll(host, ".", "%2E") + "/",
		"http://" + percentEncode(host, int(v)) + "/",
		"http://" + percentEncode(host, -1) + "/",
		"http://" + fullWidth(host, v) + "/",
		"blob:http://" + host + "/0b9c",
		`http://` + host + `\@other.test/`,
		// As given: Chromium maps it as fuzzName did. fuzzName refused any
		// label with an ASCII character that would end the host early.
		"http://" + label + ".example/",
		"http://" + flipCase(label, v) + ".example.:80/",
	}
	if uni != "" {
		s = append(s,
			"http://"+uni+"/",
			"http://"+flipCase(uni, v)+".:80/",
			"http://"+percentEncode(uni, -1)+"/",
			"http://"+strings.ReplaceAll(uni, ".", "\u3002")+"/",
		)
	}
	return s
}

func namePolicies(host, uni string) []policyCase {
	_, parent, _ := strings.Cut(host, ".")
	ps := []policyCase{
		{DomainPolicy{Prohibited: []string{host}}, false},
		{DomainPolicy{Prohibited: []string{strings.ToUpper(host) + "."}}, false},
		{DomainPolicy{Prohibited: []string{parent}}, false},
		{DomainPolicy{Prohibited: []string{"http://" + host + ":80"}}, false},
		{DomainPolicy{Prohibited: []string{"https://" + host}}, true},
		{DomainPolicy{Allowed: []string{host}}, true},
		{DomainPolicy{Allowed: []string{"*." + host}}, true},
		{DomainPolicy{Allowed: []string{"http://" + host + ":80"}}, true},
		{DomainPolicy{Allowed: []string{host + ":8080"}}, false},
		{DomainPolicy{Allowed: []string{"*.example"}, Prohibited: []string{host}}, false},
		{DomainPolicy{Allowed: []string{"other.test"}}, false},
		{DomainPolicy{BlockIPAddresses: true}, true},
	}
	if uni != "" {
		ps = append(ps,
			policyCase{DomainPolicy{Prohibited: []string{uni}}, false},
			policyCase{DomainPolicy{Allowed: []string{uni}}, true},
		)
	}
	return ps
}

func ipSpellings(ip uint32, v byte) []string {
	a, b, c, d := ip>>24, ip>>16&0xff, ip>>8&0xff, ip&0xff
	dotted := fmt.Sprintf("%d.%d.%d.%d", a, b, c, d)
	mappedHex := fmt.Sprintf("::ffff:%x:%x", ip>>16, ip&0xffff)
	return []string{
		"http://" + dotted + "/",
		"http://" + dotted + "./",
		"http://" + dotted + ":80/",
		"http://user@" + dotted + "/",
		"http://" + strconv.FormatUint(uint64(ip), 10) + "/",
		"http://0x" + strconv.FormatUint(uint64(ip), 16) + "/",
		"http://0X" + strings.ToUpper(strconv.FormatUint(uint64(ip), 16)) + "/",
		"http://0" + strconv.FormatUint(uint64(ip), 8) + "/",
		"http://" + ipPart(a, v) + "." + ipPart(b, v>>2) + "." + ipPart(c, v>>4) + "." + ipPart(d, v>>6) + "/",
		"http://" + ipPart(a, v) + "." + ipPart(ip&0xffffff, v>>2) + "/",
		"http://" + ipPart(a, v>>4) + "." + ipPart(b, v>>6) + "." + ipPart(ip&0xffff, v) + "./",
		"http://[::ffff:" + dotted + "]/",
		"http://[" + mappedHex + "]:80/",
		"http://[" + strings.ToUpper(mappedHex) + "]/",
		"http://[0:0:0:0:0:ffff:" + dotted + "]/",
		"http://" + strings.ReplaceAll(dotted, ".", "%2E") + "/",
		"http://" + strings.ReplaceAll(fullWidth(dotted, 0xff), ".", "\u3002") + "/",
		`http:\\` + dotted + `\x`,
		"blob:http://" + dotted + "/0b9c",
	}
}

func ipPolicies(ip uint32, dotted string) []policyCase {
	return []policyCase{
		{DomainPolicy{Prohibited: []string{dotted}}, false},
		{DomainPolicy{Prohibited: []string{"[::ffff:" + dotted + "]"}}, false},
		{DomainPolicy{Prohibited: []string{strconv.FormatUint(uint64(ip), 10)}}, false},
		{DomainPolicy{Prohibited: []string{dotted + ":80"}}, false},
		{DomainPolicy{Allowed: []string{"*"}, Prohibited: []string{"0x" + strconv.FormatUint(uint64(ip), 16)}}, false},
		{DomainPolicy{Allowed: []string{dotted}}, true},
		{DomainPolicy{Allowed: []string{fmt.Sprintf("[::ffff:%x:%x]", ip>>16, ip&0xffff)}}, true},
		{DomainPolicy{Allowed: []string{"http://" + dotted + ":80"}}, true},
		{DomainPolicy{Allowed: []string{"example.com"}}, false},
		{DomainPolicy{BlockIPAddresses: true}, false},
	}
}

// ipPart writes n in the base v's low two bits pick: decimal, hex, octal or
// upper-case hex.
func ipPart(n uint32, v byte) string {
	switch v & 3 {
	case 1:
		return "0x" + strconv.FormatUint(uint64(n), 16)
	case 2:
		return "0" + strconv.FormatUint(uint64(n), 8)
	case 3:
		return "0X" + strings.ToUpper(strconv.FormatUint(uint64(n), 16))
	}
	return strconv.FormatUint(uint64(n), 10)
}

// flipCase upper-cases the ASCII letters whose position's bit is set in the
// repeating pattern v. Other letters keep their case: upper-casing them can
// name another host ("ı" upper-cases to "I").
func flipCase(s string, v byte) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' && v>>(i%8)&1 == 1 {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// fullWidth writes the ASCII letters and digits whose position's bit is set
// in v as their full-width forms, which UTS #46 maps back.
func fullWidth(s string, v byte) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case v>>(i%8)&1 == 0:
			b.WriteRune(r)
		case 'a' <= r && r <= 'z':
			b.WriteRune(r - 'a' + '\uff41')
		case '0' <= r && r <= '9':
			b.WriteRune(r - '0' + '\uff10')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// percentEncode escapes the byte at i (modulo the length), or every byte
// when i is negative.
func percentEncode(s string, i int) string {
	if i < 0 {
		var b strings.Builder
		for j := 0; j < len(s); j++ {
			fmt.Fprintf(&b, "%%%02X", s[j])
		}
		return b.String()
	}
	i %= len(s)
	return s[:i] + fmt.Sprintf("%%%02x", s[i]) + s[i+1:]
}
