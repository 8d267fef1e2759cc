package dom

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/browseragent/browseragent/dom"
	"github.com/browseragent/browseragent/events"
)

// frames lists the tree's iframe and frame elements with where they are
// loaded from (the agent's CAPTCHA policy reads them).
func frames(t *dom.Tree) []events.FrameInfo {
	if t == nil {
		return nil
	}
	var out []events.FrameInfo
	t.Walk(func(n *dom.Node) bool {
		if n.Tag != "iframe" && n.Tag != "frame" {
			return true
		}
		u := ""
		if d := n.ContentDocument; d != nil && d.Frame != nil {
			u = d.Frame.URL
		}
		if u == "" || u == "about:blank" {
			// Not captured (over the frame limits, not loaded yet): the
			// element's src still says what it loads, relative to the
			// document the element is in.
			if src := strings.TrimSpace(n.Attr("src")); src != "" {
				u = resolve(n, src)
			}
		}
		if u != "" {
			out = append(out, events.FrameInfo{URL: u, Visible: rendered(n)})
		}
		return true
	})
	return out
}

// resolve makes src absolute against the URL of the document holding n.
func resolve(n *dom.Node, src string) string {
	ref, err := url.Parse(src)
	if err != nil || ref.IsAbs() || n.Frame == nil {
		return src
	}
	base, err := url.Parse(n.Frame.URL)
	if err != nil || !base.IsAbs() {
		return src
	}
	return base.ResolveReference(ref).String()
}

// rendered is the frame element's CSS visibility with a layout box, without
// the node's viewport test: a CAPTCHA far down a long form is on the page
// before it is scrolled to.
func rendered(n *dom.Node) bool {
	l := n.Layout
	if l == nil || !l.HasLayout || l.Bounds.Empty() {
		return false
	}
	if strings.EqualFold(l.Styles.Display, "none") || strings.EqualFold(l.Styles.Visibility, "hidden") {
		return false
	}
	if op, err := strconv.ParseFloat(strings.TrimSpace(l.Styles.Opacity), 64); err == nil && op <= 0 {
		return false
	}
	return true
}
