package actions

import (
	"context"
	_ "embed"
	"errors"
	"fmt"

	cdpproto "github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"

	"github.com/browseragent/browseragent/internal/pagejs"
)

// ErrNotVisible is wrapped by the error of a click or hover on an element
// a person could not see now: it has no box (display:none, inside a hidden
// parent, detached from layout) or is visibility:hidden. Nothing was
// clicked; the page changed since it was observed, so the model should
// request a new browser state.
var ErrNotVisible = errors.New("actions: element not visible")

func notVisible(el *element, verb, why string) error {
	return fmt.Errorf("%w: %s has no visible box now (%s), so a person could not %s it and it was not %sed; request a new browser state", ErrNotVisible, el.info.Desc, why, verb, verb)
}

// boxChildJS finds, for an element without a visible box of its own, a
// descendant a person can see, or says why there is none.
//
//go:embed js/box_child.js
var boxChildJSSrc string

var boxChildJS = withDescribe(boxChildJSSrc)

// uncoverJS scrolls an element to another alignment after a hit test found
// it covered, and first reports whether it is visible at all.
//
//go:embed js/uncover.js
var uncoverJS string

// visibleLabelJS finds the label of a checkbox or radio a person can click.
//
//go:embed js/visible_label.js
var visibleLabelJSSrc string

var visibleLabelCallJS = "function(){ return (" + visibleLabelJSSrc + ")(this); }"

// alignments are where uncovering scrolls a covered element, in order: a
// sticky header or footer rarely covers the middle of the viewport.
var alignments = [...][2]string{{"center", "center"}, {"end", "end"}, {"start", "start"}}

// reach finds the point where a real pointer reaches el, the way a person
// would: its visible point; for an element without a box of its own
// (display:contents, a zero-size wrapper) the point of a visible
// descendant; and when something covers that point, el scrolled to other
// alignments until the hit test passes. A non-empty cover means el stayed
// covered (a modal, an overlay): p is then its point under the cover. An
// element nobody can see is an error wrapping ErrNotVisible. When the
// first hit test passes this costs no more than visiblePoint and hitTest.
func reach(ctx context.Context, el *element, verb string) (p point, cover string, err error) {
	aim := el
	p, err = visiblePoint(ctx, el)
	if errors.Is(err, errNoGeometry) {
		var why string
		aim, why, err = boxChild(ctx, el)
		if err != nil {
			return p, "", err
		}
		if aim == nil {
			return p, "", notVisible(el, verb, why)
		}
		p, err = visiblePoint(ctx, aim)
		if errors.Is(err, errNoGeometry) {
			return p, "", notVisible(el, verb, "its content is outside the visible part of the page")
		}
	}
	if err != nil {
		return p, "", err
	}
	return uncover(ctx, el, aim, p, verb)
}

// uncover hit-tests p against el and, when something else is there,
// scrolls aim (el or the descendant whose point p is) to the other
// alignments, re-reading its point and hit-testing each time.
func uncover(ctx context.Context, el, aim *element, p point, verb string) (point, string, error) {
	ok, cover, err := hitTest(ctx, el, p)
	if err != nil || ok {
		return p, "", err
	}
	for _, al := range alignments {
		var st struct {
			Visible  bool   `json:"visible"`
			Scrolled bool   `json:"scrolled"`
			Why      string `json:"why"`
		}
		if err := pagejs.CallOn(ctx, aim.sess, aim.obj, uncoverJS, &st, al[0], al[1]); err != nil {
			return p, "", err
		}
		if !st.Visible {
			return p, "", notVisible(el, verb, st.Why)
		}
		if !st.Scrolled {
			break // a text node: nothing to scroll
		}
		q, err := visiblePoint(ctx, aim)
		if errors.Is(err, errNoGeometry) {
			continue
		}
		if err != nil {
			return p, "", err
		}
		ok, c, err := hitTest(ctx, el, q)
		if err != nil {
			return p, "", err
		}
		if ok {
			return q, "", nil
		}
		p, cover = q, c
	}
	return p, cover, nil
}

// boxChild returns a visible descendant of el (without info), or why el
// has nothing visible.
func boxChild(ctx context.Context, el *element) (*element, string, error) {
	var why string
	child, err := callNode(ctx, el, boxChildJS, &why)
	if err != nil || child != nil {
		return child, "", err
	}
	if why == "" {
		why = "it has no layout box"
	}
	return nil, why, nil
}

// visibleLabel returns the label a person would click for a visually
// hidden checkbox or radio input, or nil.
func visibleLabel(ctx context.Context, el *element) (*element, error) {
	l, err := callNode(ctx, el, visibleLabelCallJS, nil)
	if err != nil || l == nil {
		return nil, err
	}
	return resolveNode(ctx, l.sess, l.backend, "the label")
}

// callNode calls decl on el. A node result is returned as an element of
// el's session (its info not read); any other result is decoded into out.
func callNode(ctx context.Context, el *element, decl string, out any) (*element, error) {
	res, err := cdpproto.Call(ctx, el.sess, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: decl,
		ObjectID:            el.obj,
		ObjectGroup:         objectGroup,
	})
	if err != nil {
		return nil, err
	}
	if res.ExceptionDetails != nil {
		return nil, &pagejs.ScriptError{Text: pagejs.ExceptionText(res.ExceptionDetails)}
	}
	r := res.Result
	if r == nil {
		return nil, nil
	}
	if r.Type == runtime.RemoteObjectTypeObject && r.Subtype == runtime.RemoteObjectSubtypeNode && r.ObjectID != "" {
		d, err := cdpproto.Call(ctx, el.sess, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: r.ObjectID})
		if err != nil {
			return nil, err
		}
		return &element{sess: el.sess, backend: d.Node.BackendNodeID, obj: r.ObjectID}, nil
	}
	if out != nil && len(r.Value) > 0 {
		return nil, jsonv2.Unmarshal(r.Value, out)
	}
	return nil, nil
}
