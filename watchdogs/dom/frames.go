package dom

import (
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
			// element's src still says what it loads.
			if src := n.Attr("src"); src != "" {
				u = src
			}
		}
		if u != "" {
			out = append(out, events.FrameInfo{URL: u, Visible: n.Visible})
		}
		return true
	})
	return out
}
