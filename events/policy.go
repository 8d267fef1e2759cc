package events

// RequestBlockedEvent reports one request the URL policy refused before it
// left the browser: a document, a sub-resource (script, image, fetch, ...),
// a worker's request, or a connection the network guard refused (a
// WebSocket, a preconnect, anything tunnelled). One event per decision, so
// the trace holds a record of each. Emitted by the security watchdog;
// handled by the DOM watchdog (the next observation's Blocked summary) and
// for observers and the trace.
type RequestBlockedEvent struct {
	// TargetID is the tab, frame or worker target the request came from;
	// "" when the network guard refused a connection it cannot attribute.
	TargetID string
	// TabID is the tab the target belongs to, when known ("" for a shared
	// or service worker, or a connection the guard refused).
	TabID string
	// URL is the request's URL; for a refused connection, scheme://host:port.
	URL string
	// Host is the URL's host in canonical form (what the policy matched).
	Host string
	// ResourceType is Chromium's resource type ("Document", "Script",
	// "Fetch", "XHR", "Image", "Ping", "Other", ...) or "Connection" for a
	// connection the network guard refused.
	ResourceType string
	// Initiator is the URL of the document or script that started the
	// request, when Chromium says.
	Initiator string
	// Reason is the policy's reason.
	Reason string
	// Layer is where it was stopped: "policy" (a navigation the runtime
	// was asked for, refused before it started), "interception" (CDP
	// request interception, before the request was sent) or "guard" (the
	// network guard, before a connection was opened: WebSocket handshakes
	// and preconnects are refused here, as type "Connection").
	Layer string
}

// Summary implements bus.Summarizer.
func (e RequestBlockedEvent) Summary() string {
	return e.ResourceType + " " + e.URL + ": " + e.Reason
}

// RequestBlocked reports a refused request (10 s; not upstream).
var RequestBlocked = def[RequestBlockedEvent, None]("RequestBlocked", 10*sec)

// BlockedRequests summarises the refused requests to one host since the
// last observation.
type BlockedRequests struct {
	Host  string
	Count int
	// Types are the distinct resource types, lower case, in the order
	// first seen ("script", "xhr", "connection").
	Types []string
}
