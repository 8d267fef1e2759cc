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
//     443 for https and wss);
//   - a trailing "/" is ignored.
//
// The pattern's host and the URL's host are both compared in the form
// [NormalizeHost] gives them: lower case, one trailing dot dropped,
// internationalised names in punycode, IP addresses in canonical form (an
// IPv4-mapped IPv6 address as IPv4). So "bücher.example" matches the
// "xn--bcher-kva.example" that Chromium reports, and the other way round.
//
// A URL without a host (data:, javascript:, about:blank) matches no pattern.
// A blob: URL is matched by the origin inside it: blob:https://example.com/id
// is host example.com with scheme https.
package urlmatch
