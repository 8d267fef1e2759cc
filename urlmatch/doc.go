// Package urlmatch is the project's one definition of a domain pattern: the
// URL policy's allow and block lists, action domain filters and per-domain
// secrets all decide with it, so a pattern means the same thing everywhere.
//
// A pattern is case-insensitive and surrounding spaces are ignored:
//   - "example.com" matches example.com and www.example.com, and no other
//     subdomain;
//   - "*.example.com" matches example.com and every subdomain at any depth;
//   - any other glob ("shop-*.example.com", "?", "[a-z]") matches the whole
//     host with [path.Match] rules;
//   - "*" matches any URL that has a host;
//   - a scheme prefix ("https://example.com") restricts the scheme;
//   - a port suffix ("example.com:8080", "[::1]:8080") restricts the port; a
//     URL without a port has its scheme's default port (80 for http and ws,
//     443 for https and wss, 21 for ftp);
//   - a trailing "/" is ignored.
//
// A URL string is read as Chromium reads it ([ParseURL]): "http:\\host",
// "http://user@host", "http://ho%73t" and "http://host。example" name the
// hosts Chromium loads. The pattern's host and the URL's host are then both
// compared in the one canonical form [NormalizeHost] gives them: lower case,
// one trailing dot dropped, internationalised names mapped as UTS #46 maps
// them and in punycode, IPv4 in any notation as a dotted quad, an
// IPv4-mapped IPv6 address as IPv4, no brackets. So "bücher.example"
// matches the "xn--bcher-kva.example" that Chromium reports, and the other
// way round, and "127.0.0.2" matches "[::ffff:7f00:2]" and "0x7f.2".
//
// A URL without a host (data:, javascript:, about:blank) matches no pattern.
// A blob: URL is matched by the origin inside it: blob:https://example.com/id
// is host example.com with scheme https.
package urlmatch
