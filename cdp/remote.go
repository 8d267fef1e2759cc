package cdp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ResolveWebSocketURL turns a browser endpoint into a websocket URL.
// ws:// and wss:// URLs are returned unchanged (Browserless-style token query
// parameters and Selenium Grid se:cdp URLs pass through). For http:// and
// https:// it GETs <endpoint>/json/version with header and returns its
// webSocketDebuggerUrl. The HTTP client is private and its idle connections
// are closed before returning, so no goroutine outlives the call.
func ResolveWebSocketURL(ctx context.Context, endpoint string, header http.Header) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", fmt.Errorf("cdp: bad endpoint %q: %w", endpoint, err)
	}
	switch u.Scheme {
	case "ws", "wss":
		return endpoint, nil
	case "http", "https":
	default:
		return "", fmt.Errorf("cdp: bad endpoint %q: scheme must be ws, wss, http or https", redactURL(endpoint))
	}
	if u.Host == "" {
		return "", fmt.Errorf("cdp: bad endpoint %q: no host", redactURL(endpoint))
	}
	v := *u
	v.Path = strings.TrimSuffix(u.Path, "/")
	if !strings.HasSuffix(v.Path, "/json/version") {
		v.Path += "/json/version"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.String(), nil)
	if err != nil {
		return "", fmt.Errorf("cdp: %w", err)
	}
	for k, vs := range header {
		req.Header[k] = append([]string(nil), vs...)
	}
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("cdp: GET %s: %w", redactURL(v.String()), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("cdp: GET %s: %w", redactURL(v.String()), err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("cdp: GET %s: HTTP %s", redactURL(v.String()), resp.Status)
	}
	var info struct {
		WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
	}
	if err := json.Unmarshal(body, &info); err != nil {
		return "", fmt.Errorf("cdp: GET %s: decoding: %w", redactURL(v.String()), err)
	}
	if info.WebSocketDebuggerURL == "" {
		return "", fmt.Errorf("cdp: GET %s: no webSocketDebuggerUrl in reply", redactURL(v.String()))
	}
	return info.WebSocketDebuggerURL, nil
}

// Connect resolves endpoint with ResolveWebSocketURL (using the WithHeader
// headers) and dials it with Dial, passing opts on: every Dial option
// (WithKeepalive, WithLogger, ...) applies to the connection.
func Connect(ctx context.Context, endpoint string, opts ...Option) (*Conn, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	ws, err := ResolveWebSocketURL(ctx, endpoint, o.header)
	if err != nil {
		return nil, err
	}
	return Dial(ctx, ws, opts...)
}

// redactURL hides query values and user info (tokens) in error messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "<unparsable URL>"
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q.Set(k, "REDACTED")
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}
