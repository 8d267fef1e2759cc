// Package liveview lets a person see the focused tab of a session and act
// on it from an ordinary browser tab: the "hand the browser to a person"
// half of a hand-off (agent.HumanHandler).
//
// A Server listens on loopback only (Config.Addr, default 127.0.0.1:0) and
// serves everything under an unguessable path, http://127.0.0.1:PORT/TOKEN/,
// because loopback alone lets any local user or web page reach it. It sends
// no CORS headers, answers 403 to a Host header that is not a loopback name
// (DNS rebinding) and to a POST whose Origin is another site, 415 to a POST
// that is not application/json (a form another page posts blind), and 404
// to any path outside the token. Endpoints, all relative to URL():
//
//	GET  ./         the page (embedded HTML and JS): the frames, the person's
//	                clicks, wheel, keys and typed text forwarded to the tab
//	GET  ./frames   the frame stream: multipart/x-mixed-replace (MJPEG), one
//	                image/jpeg part per screencast frame; an <img> shows it
//	GET  ./status   JSON Status: URL, title, viewport size (CSS px), the
//	                tabs, whether a hand-off is active, who asked, for
//	                which origin, and the reason (cleaned: no control
//	                characters, 300 runes at most)
//	POST ./input    JSON Input: {"type":"click","x":10,"y":20},
//	                {"type":"scroll","x":..,"y":..,"dx":0,"dy":400},
//	                {"type":"key","key":"Enter"} (also "Control+a"),
//	                {"type":"text","text":"..."}; x,y are CSS px of the
//	                viewport. 400 with a message for bad input, 409 when no
//	                hand-off is active (the agent owns the page then).
//	POST ./tab      JSON {"id":"..."}: the person switches tabs (409
//	                outside a hand-off).
//	POST ./done     JSON {"note":"..."} (optional): the person is done.
//
// The page opens the frame stream only during a hand-off. During one, a tab
// the person opens (a target=_blank link, an OAuth or 3-D Secure popup)
// gets the session's focus, so the live view shows it; the session gives
// the focus back to the opener when it closes. A hand-off's end waits for
// the person's input being dispatched: none lands after it.
//
// The screencast runs on a CDP session of the live view's own (attached to
// the focused tab), so it coexists with the recording watchdog's; it runs
// only while at least one frame stream is open, follows the session's focus
// (the person may open a tab), acknowledges every frame, and stops when the
// last viewer leaves. What the person types is never logged or traced by
// the live view: it logs an input's type and pointer position only, and
// dispatches input straight to CDP, outside the session's bus. (What a
// field holds afterwards is the page's: the agent's next observation reads
// the value of a field that is not a password, as it reads any page.)
package liveview
