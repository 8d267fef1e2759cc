package dom

import (
	"sort"

	cdpproto "github.com/chromedp/cdproto/cdp"
)

// Element is one indexed element of an observation: the node plus where it
// lives, which is what an action needs to reach it over CDP.
type Element struct {
	// Index is what the model sees in [Index]. It equals BackendNodeID unless
	// two targets share that id; then it is a synthetic id above every
	// backend node id of the tree.
	Index         int64
	BackendNodeID cdpproto.BackendNodeID
	TargetID      string
	SessionID     string
	FrameID       string
	Node          *Node
	// New reports that the element was not in the previous SelectorMap.
	New bool
}

type elemKey struct {
	scope string // session id, or target id when the session is unknown
	id    cdpproto.BackendNodeID
}

func keyOf(n *Node) elemKey {
	s := ""
	if n.Frame != nil {
		s = n.Frame.SessionID
		if s == "" {
			s = n.Frame.TargetID
		}
	}
	return elemKey{scope: s, id: n.BackendNodeID}
}

// SelectorMap maps model-visible indexes to elements. It is immutable after
// Serialize returns and safe for concurrent reads.
type SelectorMap struct {
	byIndex map[int64]*Element
	keys    map[elemKey]struct{}
	order   []int64
}

func newSelectorMap() *SelectorMap {
	return &SelectorMap{byIndex: map[int64]*Element{}, keys: map[elemKey]struct{}{}}
}

func (m *SelectorMap) add(e *Element) {
	m.byIndex[e.Index] = e
	m.keys[keyOf(e.Node)] = struct{}{}
	m.order = append(m.order, e.Index)
}

// Get returns the element with index i.
func (m *SelectorMap) Get(i int64) (*Element, bool) {
	if m == nil {
		return nil, false
	}
	e, ok := m.byIndex[i]
	return e, ok
}

// Len returns the number of indexed elements.
func (m *SelectorMap) Len() int {
	if m == nil {
		return 0
	}
	return len(m.order)
}

// Indexes returns the indexes in document (serialization) order.
func (m *SelectorMap) Indexes() []int64 {
	if m == nil {
		return nil
	}
	return append([]int64(nil), m.order...)
}

// SortedIndexes returns the indexes in ascending order.
func (m *SelectorMap) SortedIndexes() []int64 {
	out := m.Indexes()
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Contains reports whether the element identified by session (or target) and
// backend node id was indexed.
func (m *SelectorMap) Contains(sessionOrTarget string, id cdpproto.BackendNodeID) bool {
	if m == nil {
		return false
	}
	_, ok := m.keys[elemKey{scope: sessionOrTarget, id: id}]
	return ok
}
