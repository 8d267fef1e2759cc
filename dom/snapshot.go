package dom

import (
	"fmt"
	"strings"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/domsnapshot"
)

// Rect is an axis-aligned rectangle in CSS pixels.
type Rect struct {
	X, Y, W, H float64
}

// Right returns X+W.
func (r Rect) Right() float64 { return r.X + r.W }

// Bottom returns Y+H.
func (r Rect) Bottom() float64 { return r.Y + r.H }

// Empty reports whether the rectangle has no area.
func (r Rect) Empty() bool { return r.W <= 0 || r.H <= 0 }

// Styles holds the computed styles of RequiredComputedStyles.
type Styles struct {
	Display, Visibility, Opacity    string
	Overflow, OverflowX, OverflowY  string
	Cursor, PointerEvents, Position string
	BackgroundColor                 string
	// ImageURL is the content or background-image value that holds a
	// url() (content first), "" when neither does: only icons need it.
	ImageURL string
}

func (s *Styles) set(k int, v string) {
	switch k {
	case 0:
		s.Display = v
	case 1:
		s.Visibility = v
	case 2:
		s.Opacity = v
	case 3:
		s.Overflow = v
	case 4:
		s.OverflowX = v
	case 5:
		s.OverflowY = v
	case 6:
		s.Cursor = v
	case 7:
		s.PointerEvents = v
	case 8:
		s.Position = v
	case 9:
		s.BackgroundColor = v
	case 10, 11:
		if s.ImageURL == "" && strings.Contains(v, "url(") {
			s.ImageURL = v
		}
	}
}

// Layout is the decoded snapshot data of one node. Rectangles are local to
// the node's own document (document coordinates, scroll not applied).
type Layout struct {
	HasLayout  bool // the node has a layout object (a row in layout tables)
	Bounds     Rect
	ClientRect *Rect // nil when not reported
	ScrollRect *Rect // nil when not reported
	Styles     Styles
	PaintOrder int64
	// StackingContext is true when the node starts a stacking context.
	StackingContext bool
	IsClickable     bool   // snapshot rare data isClickable
	InputValue      string // live value of <input> (rare data)
	HasInputValue   bool
	TextValue       string // live value of <textarea> (rare data)
	HasTextValue    bool
	InputChecked    bool
	OptionSelected  bool
	// PseudoImageURL is the first ImageURL of the node's rendered pseudo
	// elements (::before, ::after, ::marker), in snapshot order.
	PseudoImageURL string
	docIndex       int
}

// snapLookup maps backend node ids of one target to decoded layout data.
type snapLookup struct {
	byBackend map[cdpproto.BackendNodeID]*Layout
	docs      []*domsnapshot.DocumentSnapshot
}

func badSnap(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadSnapshot, fmt.Sprintf(format, args...))
}

// decodeSnapshot validates and decodes a captureSnapshot result. scale
// divides every rectangle (1 = none).
func decodeSnapshot(s *domsnapshot.CaptureSnapshotResult, scale float64) (*snapLookup, error) {
	out := &snapLookup{docs: s.Documents}
	str := func(i int64) (string, error) {
		if i == -1 {
			return "", nil // Chrome's "no string", e.g. an emptied input
		}
		if i < 0 || i >= int64(len(s.Strings)) {
			return "", badSnap("string index %d out of range (%d strings)", i, len(s.Strings))
		}
		return s.Strings[i], nil
	}
	total := 0
	for _, d := range s.Documents {
		if d != nil && d.Nodes != nil {
			total += len(d.Nodes.BackendNodeID)
		}
	}
	out.byBackend = make(map[cdpproto.BackendNodeID]*Layout, total)
	layouts := make([]Layout, total) // one allocation for all nodes
	next := 0
	for di, d := range s.Documents {
		if d == nil || d.Nodes == nil {
			return nil, badSnap("document %d has no nodes table", di)
		}
		n := len(d.Nodes.BackendNodeID)
		if len(d.Nodes.ParentIndex) != 0 && len(d.Nodes.ParentIndex) != n {
			return nil, badSnap("document %d: parentIndex has %d entries, backendNodeId %d", di, len(d.Nodes.ParentIndex), n)
		}
		per := layouts[next : next+n]
		next += n
		for i, id := range d.Nodes.BackendNodeID {
			per[i].docIndex = di
			if _, dup := out.byBackend[id]; !dup {
				out.byBackend[id] = &per[i]
			}
		}
		// Rare data.
		if err := rareBool(d.Nodes.IsClickable, n, func(i int) { per[i].IsClickable = true }); err != nil {
			return nil, badSnap("document %d isClickable: %v", di, err)
		}
		if err := rareBool(d.Nodes.InputChecked, n, func(i int) { per[i].InputChecked = true }); err != nil {
			return nil, badSnap("document %d inputChecked: %v", di, err)
		}
		if err := rareBool(d.Nodes.OptionSelected, n, func(i int) { per[i].OptionSelected = true }); err != nil {
			return nil, badSnap("document %d optionSelected: %v", di, err)
		}
		if err := rareString(d.Nodes.InputValue, n, str, func(i int, v string) { per[i].InputValue, per[i].HasInputValue = v, true }); err != nil {
			return nil, badSnap("document %d inputValue: %v", di, err)
		}
		if err := rareString(d.Nodes.TextValue, n, str, func(i int, v string) { per[i].TextValue, per[i].HasTextValue = v, true }); err != nil {
			return nil, badSnap("document %d textValue: %v", di, err)
		}
		lt := d.Layout
		if lt == nil {
			continue
		}
		ln := len(lt.NodeIndex)
		if len(lt.Bounds) != ln {
			return nil, badSnap("document %d: layout has %d nodeIndex but %d bounds", di, ln, len(lt.Bounds))
		}
		optLen := func(name string, l int) error {
			if l != 0 && l != ln {
				return badSnap("document %d: layout %s has %d entries, nodeIndex %d", di, name, l, ln)
			}
			return nil
		}
		for _, c := range []struct {
			name string
			l    int
		}{{"styles", len(lt.Styles)}, {"paintOrders", len(lt.PaintOrders)}, {"clientRects", len(lt.ClientRects)}, {"scrollRects", len(lt.ScrollRects)}} {
			if err := optLen(c.name, c.l); err != nil {
				return nil, err
			}
		}
		var stacking map[int64]bool
		if lt.StackingContexts != nil && len(lt.StackingContexts.Index) > 0 {
			stacking = make(map[int64]bool, len(lt.StackingContexts.Index))
			for _, i := range lt.StackingContexts.Index {
				stacking[i] = true
			}
		}
		for li, ni := range lt.NodeIndex {
			if ni < 0 || ni >= int64(n) {
				return nil, badSnap("document %d: layout nodeIndex %d out of range (%d nodes)", di, ni, n)
			}
			l := &per[ni]
			if l.HasLayout {
				continue // first layout object wins (e.g. continuation boxes)
			}
			l.HasLayout = true
			l.Bounds = toRect(lt.Bounds[li], scale)
			if len(lt.Styles) > 0 {
				for k, si := range lt.Styles[li] {
					if k >= len(RequiredComputedStyles) {
						break
					}
					v, err := str(si)
					if err != nil {
						return nil, fmt.Errorf("document %d styles: %w", di, err)
					}
					l.Styles.set(k, v)
				}
			}
			if len(lt.PaintOrders) > 0 {
				l.PaintOrder = lt.PaintOrders[li]
			}
			if len(lt.ClientRects) > 0 && len(lt.ClientRects[li]) >= 4 {
				r := toRect(lt.ClientRects[li], 1)
				l.ClientRect = &r
			}
			if len(lt.ScrollRects) > 0 && len(lt.ScrollRects[li]) >= 4 {
				r := toRect(lt.ScrollRects[li], 1)
				l.ScrollRect = &r
			}
			l.StackingContext = stacking[int64(li)]
		}
		// A pseudo element's styles go to its host (the DOM tree has no
		// node for it).
		if pt := d.Nodes.PseudoType; pt != nil && len(d.Nodes.ParentIndex) == n {
			for _, i := range pt.Index {
				if i < 0 || i >= int64(n) {
					return nil, badSnap("document %d pseudoType: node index %d out of range", di, i)
				}
				if host := d.Nodes.ParentIndex[i]; host >= 0 && host < int64(n) && per[host].PseudoImageURL == "" {
					per[host].PseudoImageURL = per[i].Styles.ImageURL
				}
			}
		}
	}
	return out, nil
}

func toRect(r domsnapshot.Rectangle, scale float64) Rect {
	if len(r) < 4 {
		return Rect{}
	}
	if scale <= 0 {
		scale = 1
	}
	return Rect{X: r[0] / scale, Y: r[1] / scale, W: r[2] / scale, H: r[3] / scale}
}

func rareBool(d *domsnapshot.RareBooleanData, n int, set func(int)) error {
	if d == nil {
		return nil
	}
	for _, i := range d.Index {
		if i < 0 || i >= int64(n) {
			return fmt.Errorf("node index %d out of range", i)
		}
		set(int(i))
	}
	return nil
}

func rareString(d *domsnapshot.RareStringData, n int, str func(int64) (string, error), set func(int, string)) error {
	if d == nil {
		return nil
	}
	if len(d.Index) != len(d.Value) {
		return fmt.Errorf("%d indexes but %d values", len(d.Index), len(d.Value))
	}
	for k, i := range d.Index {
		if i < 0 || i >= int64(n) {
			return fmt.Errorf("node index %d out of range", i)
		}
		v, err := str(int64(d.Value[k]))
		if err != nil {
			return err
		}
		set(int(i), v)
	}
	return nil
}
