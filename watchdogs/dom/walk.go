package dom

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/accessibility"
	cdpproto "github.com/chromedp/cdproto/cdp"
	cdpdom "github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/domsnapshot"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/dom"
	"github.com/browseragent/browseragent/internal/pagejs"
)

// walkJS is the viewport-scoped walker: a function (root, opts) returning
// [json, refs]; see the file's comment.
//
//go:embed js/walk.js
var walkJS string

// ErrWalk is wrapped by every failure of the walker path; the caller then
// falls back to the full capture.
var ErrWalk = errors.New("dom: viewport walker failed")

const (
	walkWorld = "browseragent-walk"
	walkGroup = "browseragent-domw-walk"
	// synthBase starts the backend node ids given to listed nodes until
	// their real ids are resolved; far above any id Chrome hands out.
	synthBase = cdpproto.BackendNodeID(1) << 40
	// domDefaultThreshold is dom.Options' default ViewportThreshold.
	domDefaultThreshold = 1000
)

// WalkSlack is added to the viewport threshold for the walker's margin:
// nodes a little beyond what Build keeps are listed too, so that rounding
// and boxes that straddle the edge decide the same way in both paths.
const WalkSlack = 200

// walkRec is one node record of the walker's answer.
type walkRec struct {
	P   int       `json:"p"`
	T   int64     `json:"t"`
	NN  string    `json:"nn"`
	LN  string    `json:"ln"`
	V   string    `json:"v"`
	A   []string  `json:"a"`
	Rel string    `json:"rel"`
	SR  string    `json:"sr"`
	DU  string    `json:"du"`
	L   []float64 `json:"L"`
	S   []string  `json:"S"`
	C   []float64 `json:"C"`
	R   []float64 `json:"R"`
	D   []float64 `json:"D"`
	O   []float64 `json:"o"`
	IV  *string   `json:"iv"`
	TV  *string   `json:"tv"`
	CK  int       `json:"ck"`
	OS  int       `json:"os"`
	SC  int       `json:"sc"`
	FR  int       `json:"fr"`
	CH  int       `json:"ch"`
	XO  int       `json:"xo"`
	// K is the record's paint key (see js/walk.js), TO a host's or
	// frame's tree order; PO the paint order ranked from K over all parts.
	K  []float64 `json:"k"`
	TO float64   `json:"to"`
	PO int64     `json:"-"`
	// PS: the element's rendered ::before/::after that draw an image.
	PS []walkPseudo `json:"ps"`
}

// walkPseudo is a pseudo element of a record: its type ("before",
// "after") and styles (dom.RequiredComputedStyles).
type walkPseudo struct {
	T string   `json:"t"`
	S []string `json:"S"`
}

type walkAnswer struct {
	Un    dom.Unlisted `json:"un"`
	N     []walkRec    `json:"n"`
	Above int          `json:"above"`
	Below int          `json:"below"`
}

// walkPart is one walker call: its records and the page array holding
// their nodes (refs[i] is record i's node).
type walkPart struct {
	recs []walkRec
	refs runtime.RemoteObjectID
	// graft: where the part hangs (index into the combined list), and how.
	parent int
	rel    string
	above  int
	below  int
	un     dom.Unlisted
}

// walker is the state of one target's walk, kept until the ids of the
// indexed nodes are resolved.
type walker struct {
	cs    *cdp.Session
	world runtime.ExecutionContextID
	parts []*walkPart
	// ref locates the node of combined record k: parts[ref[k].part].refs[ref[k].i].
	ref    []walkRef
	nodes  []*cdpproto.Node // combined, by record
	frames map[int]*cdpdom.DescribeNodeResult
	snap   *domsnapshot.CaptureSnapshotResult
	pos    []walkRef // record k's row in snap: Documents[pos[k].part].Nodes, index pos[k].i
	listen []int     // records with click listeners
	Above  int
	Below  int
	// Unlisted counts the elements the walk left out, by kind.
	Unlisted dom.Unlisted
}

type walkRef struct{ part, i int }

// walkOptions are the walker's arguments.
type walkOptions struct {
	Margin float64  `json:"margin"`
	Styles []string `json:"styles"`
	OX     float64  `json:"ox"`
	OY     float64  `json:"oy"`
	VW     float64  `json:"vw"`
	VH     float64  `json:"vh"`
	Hidden bool     `json:"hidden"`
	// Key and Ord place a graft in its host's paint layer and tree order.
	Key []float64 `json:"key,omitempty"`
	Ord *float64  `json:"ord,omitempty"`
}

// walkCall runs the walker on root (a document or shadow root object in
// the walker's world) and reads its answer.
func (wk *walker) walkCall(ctx context.Context, root runtime.RemoteObjectID, o walkOptions) (*walkPart, error) {
	ob, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	res, err := cdpproto.Call(ctx, wk.cs, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: strings.TrimSpace(walkJS),
		ObjectID:            root,
		Arguments:           []*runtime.CallArgument{{ObjectID: root}, {Value: ob}},
		ObjectGroup:         walkGroup,
		Silent:              pagejs.Ptr(true),
	})
	if err != nil {
		return nil, err
	}
	return wk.readAnswer(ctx, res.Result, res.ExceptionDetails)
}

func (wk *walker) readAnswer(ctx context.Context, r *runtime.RemoteObject, exc *runtime.ExceptionDetails) (*walkPart, error) {
	if exc != nil {
		return nil, fmt.Errorf("%w: %s", ErrWalk, exc.Text)
	}
	if r == nil || r.ObjectID == "" {
		return nil, fmt.Errorf("%w: no answer", ErrWalk)
	}
	props, err := cdpproto.Call(ctx, wk.cs, runtime.GetProperties, runtime.GetPropertiesParams{ObjectID: r.ObjectID, OwnProperties: pagejs.Ptr(true)})
	if err != nil {
		return nil, err
	}
	var text string
	part := &walkPart{parent: -1}
	for _, p := range props.Result {
		if p == nil || p.Value == nil {
			continue
		}
		switch p.Name {
		case "0":
			if err := json.Unmarshal(p.Value.Value, &text); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrWalk, err)
			}
		case "1":
			part.refs = p.Value.ObjectID
		}
	}
	var ans walkAnswer
	if err := json.Unmarshal([]byte(text), &ans); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrWalk, err)
	}
	if len(ans.N) == 0 || part.refs == "" {
		return nil, fmt.Errorf("%w: empty answer", ErrWalk)
	}
	part.recs, part.above, part.below, part.un = ans.N, ans.Above, ans.Below, ans.Un
	return part, nil
}

// add appends a part to the combined record list.
func (wk *walker) add(p *walkPart) {
	wk.parts = append(wk.parts, p)
	for i := range p.recs {
		wk.ref = append(wk.ref, walkRef{len(wk.parts) - 1, i})
	}
	wk.Above += p.above
	wk.Below += p.below
	wk.Unlisted.Elements += p.un.Elements
	wk.Unlisted.Links += p.un.Links
	wk.Unlisted.Inputs += p.un.Inputs
	wk.Unlisted.Images += p.un.Images
}

// objects returns the page objects of combined records ks (in the
// walker's world), by record; records whose object is gone are absent.
func (wk *walker) objects(ctx context.Context, ks []int) map[int]runtime.RemoteObjectID {
	byPart := map[int][]int{}
	for _, k := range ks {
		byPart[wk.ref[k].part] = append(byPart[wk.ref[k].part], k)
	}
	out := make(map[int]runtime.RemoteObjectID, len(ks))
	type pending struct {
		ks []int
		r  *cdp.Reply
	}
	var ps []pending
	for pi, kk := range byPart {
		ix := make([]int, len(kk))
		for j, k := range kk {
			ix[j] = wk.ref[k].i
		}
		b, _ := json.Marshal(ix)
		ps = append(ps, pending{kk, wk.cs.Send(ctx, runtime.CommandCallFunctionOn, runtime.CallFunctionOnParams{
			FunctionDeclaration: "function(ix){return ix.map((i)=>this[i])}",
			ObjectID:            wk.parts[pi].refs,
			Arguments:           []*runtime.CallArgument{{Value: b}},
			ObjectGroup:         walkGroup,
		})})
	}
	for _, p := range ps {
		var res runtime.CallFunctionOnResult
		if p.r.Wait(ctx, &res) != nil || res.Result == nil || res.Result.ObjectID == "" {
			continue
		}
		props, err := cdpproto.Call(ctx, wk.cs, runtime.GetProperties, runtime.GetPropertiesParams{ObjectID: res.Result.ObjectID, OwnProperties: pagejs.Ptr(true)})
		if err != nil {
			continue
		}
		for _, pr := range props.Result {
			if pr == nil || pr.Value == nil || pr.Value.ObjectID == "" {
				continue
			}
			j, err := strconv.Atoi(pr.Name)
			if err != nil || j < 0 || j >= len(p.ks) {
				continue
			}
			out[p.ks[j]] = pr.Value.ObjectID
		}
	}
	return out
}

// describe runs DOM.describeNode on each object, pipelined.
func (wk *walker) describe(ctx context.Context, objs map[int]runtime.RemoteObjectID, depth int64) map[int]*cdpproto.Node {
	type pending struct {
		k int
		r *cdp.Reply
	}
	ps := make([]pending, 0, len(objs))
	for k, o := range objs {
		ps = append(ps, pending{k, wk.cs.Send(ctx, cdpdom.CommandDescribeNode, cdpdom.DescribeNodeParams{ObjectID: o, Depth: pagejs.Ptr(depth), Pierce: pagejs.Ptr(depth != 0)})})
	}
	out := make(map[int]*cdpproto.Node, len(ps))
	for _, p := range ps {
		var d cdpdom.DescribeNodeResult
		if p.r.Wait(ctx, &d) == nil && d.Node != nil {
			out[p.k] = d.Node
		}
	}
	return out
}

// walkTarget walks one target's main frame document, then the closed
// shadow roots and the same-process documents the page's script cannot
// reach, grafted where they belong.
//
// With warmAX, the renderer is first asked for one AX node of the document
// (its answer unused): Chrome then builds its accessibility cache before
// the walk rather than within the wait for the candidates' AX nodes.
//
// On an error the walk's page objects are released: the caller gets no
// walker to release.
func walkTarget(ctx context.Context, cs *cdp.Session, margin float64, warmAX bool) (_ *walker, err error) {
	if warmAX {
		if d, err := cdpproto.Call(ctx, cs, cdpdom.GetDocument, cdpdom.GetDocumentParams{Depth: pagejs.Ptr(int64(0))}); err == nil && d.Root != nil {
			cs.Send(ctx, accessibility.CommandGetPartialAXTree, accessibility.GetPartialAXTreeParams{
				BackendNodeID: d.Root.BackendNodeID, FetchRelatives: pagejs.Ptr(false)})
		}
	}
	world, err := cdpproto.Call(ctx, cs, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{
		FrameID: cdpproto.FrameID(cs.TargetID()), WorldName: walkWorld, GrantUniveralAccess: pagejs.Ptr(true)})
	if err != nil {
		return nil, fmt.Errorf("%w: isolated world: %w", ErrWalk, err)
	}
	wk := &walker{cs: cs, world: world.ExecutionContextID}
	defer func() {
		if err != nil {
			wk.release(ctx)
		}
	}()
	o := walkOptions{Margin: margin, Styles: dom.RequiredComputedStyles}
	ob, _ := json.Marshal(o)
	ev, err := cdpproto.Call(ctx, cs, runtime.Evaluate, runtime.EvaluateParams{
		Expression:  "(" + strings.TrimSpace(walkJS) + ")(document, Object.assign(" + string(ob) + ", {vw: innerWidth, vh: innerHeight}))",
		ContextID:   wk.world,
		ObjectGroup: walkGroup,
		Silent:      pagejs.Ptr(true),
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrWalk, err)
	}
	part, err := wk.readAnswer(ctx, ev.Result, ev.ExceptionDetails)
	if err != nil {
		return nil, err
	}
	wk.add(part)
	// Grafts: closed shadow roots and unreachable same-process documents.
	// A graft may itself have grafts; a few rounds bound the depth.
	done := 0
	for round := 0; round < 4 && done < len(wk.ref); round++ {
		var hosts, frames []int
		for k := done; k < len(wk.ref); k++ {
			r := wk.rec(k)
			if r.CH == 1 {
				hosts = append(hosts, k)
			}
			if r.FR == 1 {
				frames = append(frames, k)
			}
		}
		done = len(wk.ref)
		if len(hosts)+len(frames) == 0 {
			break
		}
		objs := wk.objects(ctx, append(append([]int(nil), hosts...), frames...))
		hostObjs := map[int]runtime.RemoteObjectID{}
		for _, k := range hosts {
			if o, ok := objs[k]; ok {
				hostObjs[k] = o
			}
		}
		frameObjs := map[int]runtime.RemoteObjectID{}
		for _, k := range frames {
			if o, ok := objs[k]; ok {
				frameObjs[k] = o
			}
		}
		// Hosts: depth 0 lists no children but pierce lists shadow roots.
		hd := wk.describe(ctx, hostObjs, 1)
		fd := wk.describe(ctx, frameObjs, 1)
		if wk.frames == nil {
			wk.frames = map[int]*cdpdom.DescribeNodeResult{}
		}
		for k, n := range fd {
			wk.frames[k] = &cdpdom.DescribeNodeResult{Node: n}
		}
		for _, k := range hosts {
			n := hd[k]
			if n == nil {
				continue
			}
			for _, sr := range n.ShadowRoots {
				if sr == nil || sr.ShadowRootType != cdpproto.ShadowRootTypeClosed {
					continue
				}
				if err := wk.graft(ctx, k, "", sr.BackendNodeID, wk.world, margin); err != nil {
					return nil, err
				}
			}
		}
		for _, k := range frames {
			r := wk.rec(k)
			n := fd[k]
			if r.XO != 1 || n == nil || n.ContentDocument == nil || len(r.O) != 2 {
				continue // an OOPIF (its own target) or not loaded
			}
			fw, err := cdpproto.Call(ctx, cs, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{
				FrameID: n.FrameID, WorldName: walkWorld, GrantUniveralAccess: pagejs.Ptr(true)})
			if err != nil {
				continue // detached meanwhile
			}
			if err := wk.graft(ctx, k, "doc", n.ContentDocument.BackendNodeID, fw.ExecutionContextID, margin); err != nil {
				return nil, err
			}
		}
	}
	wk.rankPaint()
	return wk, nil
}

// rankPaint sets every record's paint order: the rank of its key among
// all the walk's records (equal keys, equal ranks), so a closed shadow
// root's content is ordered with its host's page.
func (wk *walker) rankPaint() {
	ks := make([]int, len(wk.ref))
	for i := range ks {
		ks[i] = i
	}
	cmpKey := func(a, b []float64) int {
		for i := 0; i < len(a) && i < len(b); i++ {
			if c := cmp.Compare(a[i], b[i]); c != 0 {
				return c
			}
		}
		return cmp.Compare(len(a), len(b))
	}
	slices.SortStableFunc(ks, func(a, b int) int { return cmpKey(wk.rec(a).K, wk.rec(b).K) })
	var rank int64
	for i, k := range ks {
		if i == 0 || cmpKey(wk.rec(ks[i-1]).K, wk.rec(k).K) != 0 {
			rank++
		}
		wk.rec(k).PO = rank
	}
}

// graft walks the root with backend id id (a closed shadow root of record
// k's element, or the document of record k's iframe) and adds it below k.
func (wk *walker) graft(ctx context.Context, k int, rel string, id cdpproto.BackendNodeID, world runtime.ExecutionContextID, margin float64) error {
	rn, err := cdpproto.Call(ctx, wk.cs, cdpdom.ResolveNode, cdpdom.ResolveNodeParams{BackendNodeID: id, ExecutionContextID: world, ObjectGroup: walkGroup})
	if err != nil || rn.Object == nil || rn.Object.ObjectID == "" {
		return nil // gone meanwhile: the host stays without it
	}
	r := wk.rec(k)
	o := walkOptions{Margin: margin, Styles: dom.RequiredComputedStyles, Hidden: len(r.L) == 0, Key: r.K}
	ord := r.TO
	o.Ord = &ord
	if len(r.O) == 2 {
		o.OX, o.OY = r.O[0], r.O[1]
	}
	// The top-level viewport: read from the main part's answer.
	o.VW, o.VH = wk.viewport()
	part, err := wk.walkCall(ctx, rn.Object.ObjectID, o)
	if err != nil {
		return err
	}
	part.parent, part.rel = k, rel
	wk.add(part)
	return nil
}

// viewport is the top-level viewport the main walk used (its document's
// client size).
func (wk *walker) viewport() (float64, float64) {
	if len(wk.parts) == 0 {
		return 0, 0
	}
	for _, r := range wk.parts[0].recs {
		if r.T == 1 && r.LN == "html" && len(r.C) == 4 {
			return r.C[2], r.C[3]
		}
	}
	return 0, 0
}

func (wk *walker) rec(k int) *walkRec {
	f := wk.ref[k]
	return &wk.parts[f.part].recs[f.i]
}

// global turns a part-local record index into a combined one.
func (wk *walker) global(part, i int) int {
	base := 0
	for p := 0; p < part; p++ {
		base += len(wk.parts[p].recs)
	}
	return base + i
}

// input converts the walk into a FrameInput: a pruned DOM tree and a
// synthetic snapshot, with synthetic backend ids (synthBase + record).
func (wk *walker) input() (*cdpproto.Node, *domsnapshot.CaptureSnapshotResult, error) {
	total := len(wk.ref)
	wk.nodes = make([]*cdpproto.Node, total)
	nodes := make([]cdpproto.Node, total)
	parentOf := make([]int, total)
	relOf := make([]string, total)
	base := 0
	for _, p := range wk.parts {
		for i, r := range p.recs {
			k := base + i
			n := &nodes[k]
			wk.nodes[k] = n
			n.BackendNodeID = synthBase + cdpproto.BackendNodeID(k)
			n.NodeType = r.T
			n.NodeName = r.NN
			n.LocalName = r.LN
			n.NodeValue = r.V
			n.Attributes = r.A
			n.DocumentURL = r.DU
			if r.SR != "" {
				n.ShadowRootType = cdpproto.ShadowRootType(r.SR)
			}
			n.IsScrollable = r.SC == 1
			if r.P >= 0 {
				parentOf[k] = base + r.P
				relOf[k] = r.Rel
			} else if p.parent >= 0 {
				parentOf[k] = p.parent
				relOf[k] = p.rel
			} else {
				parentOf[k] = -1
			}
		}
		base += len(p.recs)
	}
	if total == 0 || parentOf[0] != -1 || nodes[0].NodeType != dom.DocumentNode {
		return nil, nil, fmt.Errorf("%w: no document", ErrWalk)
	}
	for k := 1; k < total; k++ {
		pk := parentOf[k]
		if pk < 0 || pk >= k {
			return nil, nil, fmt.Errorf("%w: record %d has parent %d", ErrWalk, k, pk)
		}
		par, n := &nodes[pk], &nodes[k]
		switch {
		case relOf[k] == "doc":
			par.ContentDocument = n
		case n.NodeType == dom.DocumentFragmentNode && n.ShadowRootType != "":
			par.ShadowRoots = append(par.ShadowRoots, n)
		default:
			par.Children = append(par.Children, n)
		}
	}
	for k, d := range wk.frames {
		if d.Node != nil {
			nodes[k].FrameID = d.Node.FrameID
		}
	}
	// The snapshot: one document table per document record.
	snap := &domsnapshot.CaptureSnapshotResult{}
	strs := map[string]int64{}
	str := func(s string) domsnapshot.StringIndex {
		if i, ok := strs[s]; ok {
			return domsnapshot.StringIndex(i)
		}
		i := int64(len(snap.Strings))
		snap.Strings = append(snap.Strings, s)
		strs[s] = i
		return domsnapshot.StringIndex(i)
	}
	wk.snap = snap
	wk.pos = make([]walkRef, total)
	docOf := make([]int, total)
	docIdx := map[int]int{}
	// styleRow turns a record's style values into a layout styles row.
	styleRow := func(vals []string) domsnapshot.ArrayOfStrings {
		st := make(domsnapshot.ArrayOfStrings, len(dom.RequiredComputedStyles))
		for i := range st {
			v := ""
			if i < len(vals) {
				v = vals[i]
			}
			st[i] = int64(str(v))
		}
		return st
	}
	// Pseudo elements get ids past the records' (never resolved).
	pseudoID := synthBase + cdpproto.BackendNodeID(total)
	for k := 0; k < total; k++ {
		if nodes[k].NodeType == dom.DocumentNode {
			docIdx[k] = len(snap.Documents)
			r := wk.rec(k)
			d := &domsnapshot.DocumentSnapshot{Nodes: &domsnapshot.NodeTreeSnapshot{}, Layout: &domsnapshot.LayoutTreeSnapshot{}}
			if len(r.D) == 4 {
				d.ContentWidth, d.ContentHeight, d.ScrollOffsetX, d.ScrollOffsetY = r.D[0], r.D[1], r.D[2], r.D[3]
			}
			snap.Documents = append(snap.Documents, d)
			docOf[k] = docIdx[k]
		} else {
			docOf[k] = docOf[parentOf[k]]
		}
		d := snap.Documents[docOf[k]]
		nt := d.Nodes
		ni := int64(len(nt.BackendNodeID))
		wk.pos[k] = walkRef{docOf[k], int(ni)}
		nt.BackendNodeID = append(nt.BackendNodeID, nodes[k].BackendNodeID)
		// Parent rows, for the pseudo elements' hosts: a document's
		// root row has none in its own table.
		if pk := parentOf[k]; pk >= 0 && nodes[k].NodeType != dom.DocumentNode {
			nt.ParentIndex = append(nt.ParentIndex, int64(wk.pos[pk].i))
		} else {
			nt.ParentIndex = append(nt.ParentIndex, -1)
		}
		r := wk.rec(k)
		if r.IV != nil {
			if nt.InputValue == nil {
				nt.InputValue = &domsnapshot.RareStringData{}
			}
			nt.InputValue.Index = append(nt.InputValue.Index, ni)
			nt.InputValue.Value = append(nt.InputValue.Value, str(*r.IV))
		}
		if r.TV != nil {
			if nt.TextValue == nil {
				nt.TextValue = &domsnapshot.RareStringData{}
			}
			nt.TextValue.Index = append(nt.TextValue.Index, ni)
			nt.TextValue.Value = append(nt.TextValue.Value, str(*r.TV))
		}
		if r.CK == 1 {
			if nt.InputChecked == nil {
				nt.InputChecked = &domsnapshot.RareBooleanData{}
			}
			nt.InputChecked.Index = append(nt.InputChecked.Index, ni)
		}
		if r.OS == 1 {
			if nt.OptionSelected == nil {
				nt.OptionSelected = &domsnapshot.RareBooleanData{}
			}
			nt.OptionSelected.Index = append(nt.OptionSelected.Index, ni)
		}
		if len(r.L) != 4 {
			continue
		}
		lt := d.Layout
		lt.NodeIndex = append(lt.NodeIndex, ni)
		lt.Bounds = append(lt.Bounds, domsnapshot.Rectangle(r.L))
		lt.Styles = append(lt.Styles, styleRow(r.S))
		lt.PaintOrders = append(lt.PaintOrders, r.PO)
		lt.ClientRects = append(lt.ClientRects, domsnapshot.Rectangle(r.C))
		lt.ScrollRects = append(lt.ScrollRects, domsnapshot.Rectangle(r.R))
		// Each pseudo element: a row of its own under the host, laid out
		// (at the host's bounds: only its styles are read).
		for _, ps := range r.PS {
			pi := int64(len(nt.BackendNodeID))
			nt.BackendNodeID = append(nt.BackendNodeID, pseudoID)
			pseudoID++
			nt.ParentIndex = append(nt.ParentIndex, ni)
			if nt.PseudoType == nil {
				nt.PseudoType = &domsnapshot.RareStringData{}
			}
			nt.PseudoType.Index = append(nt.PseudoType.Index, pi)
			nt.PseudoType.Value = append(nt.PseudoType.Value, str(ps.T))
			lt.NodeIndex = append(lt.NodeIndex, pi)
			lt.Bounds = append(lt.Bounds, domsnapshot.Rectangle(r.L))
			lt.Styles = append(lt.Styles, styleRow(ps.S))
			lt.PaintOrders = append(lt.PaintOrders, r.PO)
			lt.ClientRects = append(lt.ClientRects, domsnapshot.Rectangle{})
			lt.ScrollRects = append(lt.ScrollRects, domsnapshot.Rectangle{})
		}
	}
	return &nodes[0], snap, nil
}

// resolve sets the real backend node ids of the tree's nodes in want
// (synthetic ids of this walk), pipelined. Nodes gone meanwhile keep
// their synthetic id.
func (wk *walker) resolve(ctx context.Context, want []*dom.Node) {
	ks := make([]int, 0, len(want))
	byK := make(map[int]*dom.Node, len(want))
	for _, n := range want {
		k := int(n.BackendNodeID - synthBase)
		if n.BackendNodeID < synthBase || k >= len(wk.ref) {
			continue
		}
		ks = append(ks, k)
		byK[k] = n
	}
	if len(ks) == 0 {
		return
	}
	d := wk.describe(ctx, wk.objects(ctx, ks), 0)
	for k, cn := range d {
		if cn.BackendNodeID != 0 {
			byK[k].BackendNodeID = cn.BackendNodeID
			// The input says the same, so a recording replays as seen.
			wk.nodes[k].BackendNodeID = cn.BackendNodeID
			p := wk.pos[k]
			wk.snap.Documents[p.part].Nodes.BackendNodeID[p.i] = cn.BackendNodeID
		}
	}
}

// listeners maps the click-listener scan's elements (objects of the page's
// main world, by backend id) to the walk's records and returns their
// synthetic ids.
func (wk *walker) listeners(ctx context.Context, ids []cdpproto.BackendNodeID) []cdpproto.BackendNodeID {
	if len(ids) == 0 || len(wk.parts) == 0 {
		return nil
	}
	args := []*runtime.CallArgument{}
	for _, id := range ids {
		rn, err := cdpproto.Call(ctx, wk.cs, cdpdom.ResolveNode, cdpdom.ResolveNodeParams{BackendNodeID: id, ExecutionContextID: wk.world, ObjectGroup: walkGroup})
		if err == nil && rn.Object != nil && rn.Object.ObjectID != "" {
			args = append(args, &runtime.CallArgument{ObjectID: rn.Object.ObjectID})
		}
	}
	if len(args) == 0 {
		return nil
	}
	res, err := cdpproto.Call(ctx, wk.cs, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: "function(...ns){return ns.map((n)=>this.indexOf(n))}",
		ObjectID:            wk.parts[0].refs,
		Arguments:           args,
		ReturnByValue:       pagejs.Ptr(true),
	})
	if err != nil || res.Result == nil {
		return nil
	}
	var ix []int
	if json.Unmarshal(res.Result.Value, &ix) != nil {
		return nil
	}
	var out []cdpproto.BackendNodeID
	for _, i := range ix {
		if i >= 0 {
			k := wk.global(0, i)
			wk.listen = append(wk.listen, k)
			out = append(out, synthBase+cdpproto.BackendNodeID(k))
		}
	}
	return out
}

// patchInput brings the frame input's listener list up to the resolved ids.
func (wk *walker) patchInput(fi *dom.FrameInput) {
	if len(wk.listen) == 0 {
		return
	}
	fi.ClickListeners = fi.ClickListeners[:0]
	for _, k := range wk.listen {
		fi.ClickListeners = append(fi.ClickListeners, wk.nodes[k].BackendNodeID)
	}
}

// release frees the walk's page objects, on a context of its own (the
// capture's may be cancelled; leaking the group pins nodes in the page).
//
// It does not wait for the answer: the renderer may still be busy with AX
// requests that outlived their wait, and the observation must not wait
// behind them.
func (wk *walker) release(ctx context.Context) {
	wk.cs.Send(context.WithoutCancel(ctx), runtime.CommandReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: walkGroup})
}

// releaseWalks releases the page objects of every walk.
func releaseWalks(ctx context.Context, walks map[string]*walker) {
	for _, wk := range walks {
		wk.release(ctx)
	}
}

// resolveWalks gives real backend ids to the nodes of walked targets that
// AX and the index need: the index candidates, and every element of a
// target small enough for the full AX tree (merged by real id).
func resolveWalks(ctx context.Context, tree *dom.Tree, walks map[string]*walker, fullAXMax int, ax bool) {
	if len(walks) == 0 {
		return
	}
	byTarget := map[string][]*dom.Node{}
	counts := map[string]int{}
	synth := map[string]map[cdpproto.BackendNodeID]*dom.Node{}
	tree.Walk(func(n *dom.Node) bool {
		if n.Frame == nil || walks[n.Frame.TargetID] == nil {
			return true
		}
		t := n.Frame.TargetID
		counts[t]++
		if n.Type == dom.ElementNode {
			if synth[t] == nil {
				synth[t] = map[cdpproto.BackendNodeID]*dom.Node{}
			}
			synth[t][n.BackendNodeID] = n
		}
		return true
	})
	cands := dom.AXCandidates(tree)
	for t, wk := range walks {
		if ax && fullAXMax > 0 && counts[t]+wk.Unlisted.Elements <= fullAXMax {
			for _, n := range synth[t] {
				byTarget[t] = append(byTarget[t], n)
			}
			continue
		}
		for _, id := range cands[t] {
			if n := synth[t][id]; n != nil {
				byTarget[t] = append(byTarget[t], n)
			}
		}
		// Scroll containers are indexed without being candidates.
		for _, n := range synth[t] {
			if n.IsScrollable {
				byTarget[t] = append(byTarget[t], n)
			}
		}
	}
	var wg sync.WaitGroup
	for t, ns := range byTarget {
		wk := walks[t]
		wg.Add(1)
		go func() {
			defer wg.Done()
			wk.resolve(ctx, ns)
		}()
	}
	wg.Wait()
}

// resolveIndexed resolves the indexed elements that still have a
// synthetic id; it reports whether it changed any.
func resolveIndexed(ctx context.Context, res *dom.Result, walks map[string]*walker) bool {
	if len(walks) == 0 || res == nil || res.Map == nil {
		return false
	}
	byTarget := map[string][]*dom.Node{}
	for _, idx := range res.Map.Indexes() {
		e, ok := res.Map.Get(idx)
		if !ok || e.Node == nil || e.Node.BackendNodeID < synthBase || e.Node.Frame == nil {
			continue
		}
		byTarget[e.Node.Frame.TargetID] = append(byTarget[e.Node.Frame.TargetID], e.Node)
	}
	changed := false
	for t, ns := range byTarget {
		if wk := walks[t]; wk != nil {
			wk.resolve(ctx, ns)
			changed = true
		}
	}
	return changed
}
