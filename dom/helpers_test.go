package dom

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/accessibility"
	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/domsnapshot"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// tn describes a node for tests; page() turns a tree of them into the
// CDP-shaped structures Chrome would return.
type tn struct {
	tag       string // "" = text node
	text      string
	attrs     []string
	box       *Rect
	noLayout  bool
	styles    map[string]string
	paint     int64
	hasPaint  bool
	kids      []*tn
	shadow    []*tn
	shadowTyp string
	content   []*tn // iframe content document (same process): children of <html>
	frameID   string
	client    *Rect
	scroll    *Rect
	inputVal  *string
	textVal   *string
	selected  bool
	ax        *accessibility.Node
	listener  bool
	id        cdpproto.BackendNodeID
	domScroll bool
	pseudo    map[string]string // styles of a ::before (snapshot row only)
}

func E(tag string, kids ...*tn) *tn { return &tn{tag: tag, kids: kids} }
func T(s string) *tn                { return &tn{text: s} }

func (t *tn) A(kv ...string) *tn { t.attrs = append(t.attrs, kv...); return t }
func (t *tn) At(x, y, w, h float64) *tn {
	t.box = &Rect{X: x, Y: y, W: w, H: h}
	return t
}
func (t *tn) S(k, v string) *tn {
	if t.styles == nil {
		t.styles = map[string]string{}
	}
	t.styles[k] = v
	return t
}
func (t *tn) P(order int64) *tn { t.paint, t.hasPaint = order, true; return t }

// Pseudo gives the element a ::before with style k: v (as the snapshot
// lists pseudo elements: a node of their own under the host).
func (t *tn) Pseudo(k, v string) *tn {
	if t.pseudo == nil {
		t.pseudo = map[string]string{}
	}
	t.pseudo[k] = v
	return t
}
func (t *tn) NoLayout() *tn     { t.noLayout = true; return t }
func (t *tn) Kids(k ...*tn) *tn { t.kids = append(t.kids, k...); return t }
func (t *tn) Shadow(typ string, k ...*tn) *tn {
	t.shadowTyp, t.shadow = typ, k
	return t
}
func (t *tn) Content(k ...*tn) *tn { t.content = k; return t }
func (t *tn) Scroll(client, scroll Rect) *tn {
	t.client, t.scroll = &client, &scroll
	return t
}
func (t *tn) Val(v string) *tn     { t.inputVal = &v; return t }
func (t *tn) TVal(v string) *tn    { t.textVal = &v; return t }
func (t *tn) Listener() *tn        { t.listener = true; return t }
func (t *tn) ID(id int64) *tn      { t.id = cdpproto.BackendNodeID(id); return t }
func (t *tn) FrameID(f string) *tn { t.frameID = f; return t }
func (t *tn) AX(role, name string, props ...any) *tn {
	a := &accessibility.Node{NodeID: accessibility.NodeID("ax" + role + name)}
	if role != "" {
		a.Role = &accessibility.Value{Type: "role", Value: jsonv2.Value(strconv.Quote(role))}
	}
	if name != "" {
		a.Name = &accessibility.Value{Type: "computedString", Value: jsonv2.Value(strconv.Quote(name))}
	}
	for i := 0; i+1 < len(props); i += 2 {
		var raw string
		switch v := props[i+1].(type) {
		case bool:
			raw = strconv.FormatBool(v)
		case string:
			raw = strconv.Quote(v)
		case int:
			raw = strconv.Itoa(v)
		}
		a.Properties = append(a.Properties, &accessibility.Property{
			Name:  accessibility.PropertyName(props[i].(string)),
			Value: &accessibility.Value{Type: "booleanOrUndefined", Value: jsonv2.Value(raw)},
		})
	}
	t.ax = a
	return t
}

// pageBuilder produces one FrameInput.
type pageBuilder struct {
	nextID    cdpproto.BackendNodeID
	nextNode  cdpproto.NodeID
	strings   []string
	strIdx    map[string]int64
	docs      []*domsnapshot.DocumentSnapshot
	ax        []*accessibility.Node
	listeners []cdpproto.BackendNodeID
	paint     int64
	byID      map[cdpproto.BackendNodeID]bool
}

func (p *pageBuilder) str(s string) int64 {
	if i, ok := p.strIdx[s]; ok {
		return i
	}
	i := int64(len(p.strings))
	p.strings = append(p.strings, s)
	p.strIdx[s] = i
	return i
}

// frameOf builds a FrameInput whose <body> holds body; html and body span
// 1280×2000 unless given. firstID sets the first backend node id.
func frameOf(firstID int64, vp Viewport, body ...*tn) FrameInput {
	return frameOfHTML(firstID, vp, E("html", E("body", body...).At(0, 0, 1280, 2000)).At(0, 0, 1280, 2000))
}

func frameOfHTML(firstID int64, vp Viewport, html *tn) FrameInput {
	p := &pageBuilder{nextID: cdpproto.BackendNodeID(firstID), strIdx: map[string]int64{}, byID: map[cdpproto.BackendNodeID]bool{}}
	p.str("")
	doc := p.document(html, "https://example.test/")
	return FrameInput{
		Document:       doc,
		Snapshot:       &domsnapshot.CaptureSnapshotResult{Documents: p.docs, Strings: p.strings},
		AX:             p.ax,
		ClickListeners: p.listeners,
		TargetID:       "T" + strconv.FormatInt(firstID, 10),
		SessionID:      "S" + strconv.FormatInt(firstID, 10),
		Viewport:       vp,
	}
}

func (p *pageBuilder) id(t *tn) cdpproto.BackendNodeID {
	if t != nil && t.id != 0 {
		return t.id
	}
	for p.byID[p.nextID] {
		p.nextID++
	}
	id := p.nextID
	p.nextID++
	return id
}

// document builds a #document node and a snapshot document for it.
func (p *pageBuilder) document(html *tn, url string) *cdpproto.Node {
	ds := &domsnapshot.DocumentSnapshot{
		DocumentURL: domsnapshot.StringIndex(p.str(url)),
		Nodes:       &domsnapshot.NodeTreeSnapshot{},
		Layout:      &domsnapshot.LayoutTreeSnapshot{},
	}
	p.docs = append(p.docs, ds)
	p.nextNode++
	doc := &cdpproto.Node{NodeID: p.nextNode, BackendNodeID: p.id(nil), NodeType: DocumentNode, NodeName: "#document", DocumentURL: url}
	p.snapNode(ds, doc, -1, nil)
	doc.Children = []*cdpproto.Node{p.node(ds, html, 0)}
	return doc
}

func (p *pageBuilder) snapNode(ds *domsnapshot.DocumentSnapshot, n *cdpproto.Node, parent int64, t *tn) int64 {
	nt := ds.Nodes
	idx := int64(len(nt.BackendNodeID))
	nt.ParentIndex = append(nt.ParentIndex, parent)
	nt.NodeType = append(nt.NodeType, n.NodeType)
	nt.NodeName = append(nt.NodeName, domsnapshot.StringIndex(p.str(n.NodeName)))
	nt.NodeValue = append(nt.NodeValue, domsnapshot.StringIndex(p.str(n.NodeValue)))
	nt.BackendNodeID = append(nt.BackendNodeID, n.BackendNodeID)
	var attrs domsnapshot.ArrayOfStrings
	for _, a := range n.Attributes {
		attrs = append(attrs, p.str(a))
	}
	nt.Attributes = append(nt.Attributes, attrs)
	if t == nil {
		return idx
	}
	if t.inputVal != nil {
		if nt.InputValue == nil {
			nt.InputValue = &domsnapshot.RareStringData{}
		}
		nt.InputValue.Index = append(nt.InputValue.Index, idx)
		nt.InputValue.Value = append(nt.InputValue.Value, domsnapshot.StringIndex(p.str(*t.inputVal)))
	}
	if t.textVal != nil {
		if nt.TextValue == nil {
			nt.TextValue = &domsnapshot.RareStringData{}
		}
		nt.TextValue.Index = append(nt.TextValue.Index, idx)
		nt.TextValue.Value = append(nt.TextValue.Value, domsnapshot.StringIndex(p.str(*t.textVal)))
	}
	if t.selected {
		if nt.OptionSelected == nil {
			nt.OptionSelected = &domsnapshot.RareBooleanData{}
		}
		nt.OptionSelected.Index = append(nt.OptionSelected.Index, idx)
	}
	if t.noLayout {
		return idx
	}
	box := Rect{X: 0, Y: 0, W: 100, H: 20}
	if t.box != nil {
		box = *t.box
	}
	lt := ds.Layout
	lt.NodeIndex = append(lt.NodeIndex, idx)
	lt.Bounds = append(lt.Bounds, domsnapshot.Rectangle{box.X, box.Y, box.W, box.H})
	st := map[string]string{
		"display": "block", "visibility": "visible", "opacity": "1", "overflow": "visible",
		"overflow-x": "visible", "overflow-y": "visible", "cursor": "auto",
		"pointer-events": "auto", "position": "static", "background-color": "rgba(0, 0, 0, 0)",
	}
	for k, v := range t.styles {
		st[k] = v
	}
	var styles domsnapshot.ArrayOfStrings
	for _, k := range RequiredComputedStyles {
		styles = append(styles, p.str(st[k]))
	}
	lt.Styles = append(lt.Styles, styles)
	p.paint++
	po := p.paint
	if t.hasPaint {
		po = t.paint
	}
	lt.PaintOrders = append(lt.PaintOrders, po)
	var cr, sr domsnapshot.Rectangle
	if t.client != nil {
		cr = domsnapshot.Rectangle{t.client.X, t.client.Y, t.client.W, t.client.H}
		sr = domsnapshot.Rectangle{t.scroll.X, t.scroll.Y, t.scroll.W, t.scroll.H}
	}
	lt.ClientRects = append(lt.ClientRects, cr)
	lt.ScrollRects = append(lt.ScrollRects, sr)
	if t.pseudo != nil {
		p.pseudoNode(ds, idx, box, t.pseudo)
	}
	return idx
}

// pseudoNode adds a ::before row under host to the snapshot.
func (p *pageBuilder) pseudoNode(ds *domsnapshot.DocumentSnapshot, host int64, box Rect, styles map[string]string) {
	nt, lt := ds.Nodes, ds.Layout
	idx := int64(len(nt.BackendNodeID))
	nt.ParentIndex = append(nt.ParentIndex, host)
	nt.NodeType = append(nt.NodeType, ElementNode)
	nt.NodeName = append(nt.NodeName, domsnapshot.StringIndex(p.str("::before")))
	nt.NodeValue = append(nt.NodeValue, domsnapshot.StringIndex(p.str("")))
	nt.BackendNodeID = append(nt.BackendNodeID, p.id(nil))
	nt.Attributes = append(nt.Attributes, nil)
	if nt.PseudoType == nil {
		nt.PseudoType = &domsnapshot.RareStringData{}
	}
	nt.PseudoType.Index = append(nt.PseudoType.Index, idx)
	nt.PseudoType.Value = append(nt.PseudoType.Value, domsnapshot.StringIndex(p.str("before")))
	lt.NodeIndex = append(lt.NodeIndex, idx)
	lt.Bounds = append(lt.Bounds, domsnapshot.Rectangle{box.X, box.Y, 16, 16})
	var st domsnapshot.ArrayOfStrings
	for _, k := range RequiredComputedStyles {
		st = append(st, p.str(styles[k]))
	}
	lt.Styles = append(lt.Styles, st)
	p.paint++
	lt.PaintOrders = append(lt.PaintOrders, p.paint)
	lt.ClientRects = append(lt.ClientRects, domsnapshot.Rectangle{})
	lt.ScrollRects = append(lt.ScrollRects, domsnapshot.Rectangle{})
}

func (p *pageBuilder) node(ds *domsnapshot.DocumentSnapshot, t *tn, parent int64) *cdpproto.Node {
	p.nextNode++
	n := &cdpproto.Node{NodeID: p.nextNode, BackendNodeID: p.id(t)}
	p.byID[n.BackendNodeID] = true
	if t.tag == "" {
		n.NodeType, n.NodeName, n.NodeValue = TextNode, "#text", t.text
	} else {
		n.NodeType, n.NodeName, n.LocalName = ElementNode, strings.ToUpper(t.tag), t.tag
		n.Attributes = t.attrs
		n.FrameID = cdpproto.FrameID(t.frameID)
		n.IsScrollable = t.domScroll
	}
	idx := p.snapNode(ds, n, parent, t)
	if t.ax != nil {
		a := *t.ax
		a.BackendDOMNodeID = n.BackendNodeID
		p.ax = append(p.ax, &a)
	}
	if t.listener {
		p.listeners = append(p.listeners, n.BackendNodeID)
	}
	if t.shadow != nil {
		p.nextNode++
		sr := &cdpproto.Node{NodeID: p.nextNode, BackendNodeID: p.id(nil), NodeType: DocumentFragmentNode,
			NodeName: "#document-fragment", ShadowRootType: cdpproto.ShadowRootType(t.shadowTyp)}
		sidx := p.snapNode(ds, sr, idx, nil)
		for _, k := range t.shadow {
			sr.Children = append(sr.Children, p.node(ds, inheritBox(k, t), sidx))
		}
		n.ShadowRoots = []*cdpproto.Node{sr}
	}
	for _, k := range t.kids {
		n.Children = append(n.Children, p.node(ds, inheritBox(k, t), idx))
	}
	if t.content != nil {
		html := E("html", E("body", t.content...).At(0, 0, 600, 400)).At(0, 0, 600, 400)
		html.Scroll(Rect{W: 600, H: 400}, Rect{W: 600, H: 400})
		n.ContentDocument = p.document(html, "https://frame.test/")
	}
	return n
}

// inheritBox gives text nodes (and elements without a box) their parent's box.
func inheritBox(k, parent *tn) *tn {
	if k.box == nil && parent.box != nil && !k.noLayout {
		b := *parent.box
		k.box = &b
	}
	return k
}

func build(t *testing.T, in *PageInput, opts Options) *Tree {
	t.Helper()
	tree, err := Build(in, opts)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return tree
}

var stdVP = Viewport{Width: 1280, Height: 800, DPR: 1}

// render builds a single-frame page with the given body and serializes it.
func render(t *testing.T, body ...*tn) (*Result, *Tree) {
	t.Helper()
	in := &PageInput{Frames: []FrameInput{frameOf(1, stdVP, body...)}}
	tree := build(t, in, Options{})
	res, err := Serialize(tree, nil, SerializeOptions{})
	if err != nil {
		t.Fatalf("Serialize: %v", err)
	}
	return res, tree
}

// lineWith returns the first line containing sub, or "".
func lineWith(text, sub string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

func findNode(tree *Tree, pred func(*Node) bool) *Node {
	var found *Node
	tree.Walk(func(n *Node) bool {
		if found == nil && pred(n) {
			found = n
		}
		return found == nil
	})
	return found
}

func byAttr(k, v string) func(*Node) bool {
	return func(n *Node) bool { return n.Attr(k) == v }
}
