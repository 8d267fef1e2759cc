package dom

import (
	"github.com/chromedp/cdproto/accessibility"
	cdpproto "github.com/chromedp/cdproto/cdp"
)

// AXCandidates lists, per target id, the backend node ids of the visible
// elements that the interactivity rules already accept without AX data.
// A caller that skips the full AX tree (slow on big pages) can fetch AX
// nodes for just these (Accessibility.getPartialAXTree or queryAXTree) and
// hand them to MergeAX, so indexed elements still get roles and names.
// Elements that only AX would make interactive are missed that way, except
// the <body> of each document, which is always a candidate: design mode
// (a rich-text editor's iframe) shows only in AX.
func AXCandidates(t *Tree) map[string][]cdpproto.BackendNodeID {
	out := map[string][]cdpproto.BackendNodeID{}
	t.Walk(func(n *Node) bool {
		if n.Type == ElementNode && n.AX == nil && (n.Visible || isFileInput(n)) && (n.Tag == "body" || IsInteractive(n)) {
			tid := ""
			if n.Frame != nil {
				tid = n.Frame.TargetID
			}
			out[tid] = append(out[tid], n.BackendNodeID)
		}
		return true
	})
	return out
}

// MergeAX attaches AX nodes captured from target targetID to the tree's
// nodes of that target (matched by backendDOMNodeId), replacing AX data
// already there. It returns how many nodes were updated. Call it before
// Serialize, never concurrently with it.
func (t *Tree) MergeAX(targetID string, nodes []*accessibility.Node) int {
	if len(nodes) == 0 {
		return 0
	}
	by := make(map[cdpproto.BackendNodeID]*accessibility.Node, len(nodes))
	for _, a := range nodes {
		if a != nil && a.BackendDOMNodeID != 0 {
			by[a.BackendDOMNodeID] = a
		}
	}
	count := 0
	t.Walk(func(n *Node) bool {
		if n.Frame != nil && n.Frame.TargetID == targetID {
			if a := by[n.BackendNodeID]; a != nil {
				n.AX = convertAX(a)
				count++
			}
		}
		return true
	})
	return count
}
