package dom

import (
	"errors"
	"fmt"
	"os"

	"github.com/chromedp/cdproto/accessibility"
	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/domsnapshot"
)

// RequiredComputedStyles is the computedStyles list a caller must pass to
// DOMSnapshot.captureSnapshot, in this order. The decoder reads
// layout.styles[i][k] as the value of RequiredComputedStyles[k]; a snapshot
// captured with another list is decoded wrongly.
var RequiredComputedStyles = []string{
	"display",
	"visibility",
	"opacity",
	"overflow",
	"overflow-x",
	"overflow-y",
	"cursor",
	"pointer-events",
	"position",
	"background-color",
	// Icon names (identHint): an icon's file name in content:url() or a
	// background image, on the element or its ::before/::after. Pseudo
	// elements' styles are read from their own snapshot rows (a node with
	// pseudoType whose parentIndex is the host, with a layout row and
	// these styles): a capture path that builds its own snapshot gives
	// each rendered ::before/::after such a row, or icons drawn there get
	// no hint (the viewport walker gives one to those that draw a url()).
	"content",
	"background-image",
}

// Sentinel errors returned (wrapped) by Build and LoadPageInput.
var (
	// ErrNoFrames means PageInput.Frames is empty.
	ErrNoFrames = errors.New("dom: page input has no frames")
	// ErrNoDocument means a frame has no DOM.getDocument root.
	ErrNoDocument = errors.New("dom: frame has no document")
	// ErrNoSnapshot means a frame has no DOMSnapshot.captureSnapshot result.
	ErrNoSnapshot = errors.New("dom: frame has no snapshot")
	// ErrBadSnapshot means the snapshot's tables are inconsistent (parallel
	// arrays of different lengths, string or node indexes out of range).
	ErrBadSnapshot = errors.New("dom: malformed snapshot")
)

// FrameError says which frame of a PageInput was rejected and why. It wraps
// one of the sentinel errors above.
type FrameError struct {
	Index    int    // position in PageInput.Frames
	TargetID string // the frame's target, if known
	Err      error
}

func (e *FrameError) Error() string {
	return fmt.Sprintf("dom: frame %d (target %q): %v", e.Index, e.TargetID, e.Err)
}

// Unwrap returns the underlying error.
func (e *FrameError) Unwrap() error { return e.Err }

// Viewport describes the visible area of one frame's document in CSS pixels,
// as reported by Page.getLayoutMetrics (cssVisualViewport / cssLayoutViewport).
// A zero Width or Height means "unknown": the builder then falls back to the
// document's own <html> client rect, and skips the viewport test if that is
// missing too.
type Viewport struct {
	Width   float64 `json:"width"`
	Height  float64 `json:"height"`
	ScrollX float64 `json:"scrollX"`
	ScrollY float64 `json:"scrollY"`
	// DPR is the device pixel ratio. It is informational unless
	// Options.DivideBoundsByDPR is set.
	DPR float64 `json:"dpr"`
}

// FrameInput is everything captured from one CDP target (the page or one
// out-of-process iframe). Same-process iframes need no FrameInput of their
// own: they arrive as contentDocument in Document and as extra entries of
// Snapshot.Documents.
type FrameInput struct {
	// Document is DOM.getDocument(depth: -1, pierce: true).root. Required.
	Document *cdpproto.Node `json:"document"`
	// Snapshot is DOMSnapshot.captureSnapshot with computedStyles =
	// RequiredComputedStyles, includePaintOrder and includeDOMRects. Required.
	Snapshot *domsnapshot.CaptureSnapshotResult `json:"snapshot"`
	// AX is Accessibility.getFullAXTree nodes (possibly merged over frames).
	// Optional: nil or partial is fine; roles and names are then missing.
	AX []*accessibility.Node `json:"ax,omitempty"`
	// ClickListeners lists backend node ids (of this target) that have JS
	// click/mouse listeners. Optional. Kept per frame because backend node
	// ids are only unique within one target.
	ClickListeners []cdpproto.BackendNodeID `json:"clickListeners,omitempty"`

	TargetID  string `json:"targetId"`
	SessionID string `json:"sessionId"`
	// FrameID is this target's root frame id. For an OOPIF it equals the
	// frameId that the owner <iframe> carries in the parent's getDocument.
	FrameID string `json:"frameId,omitempty"`
	// Owner locates the <iframe> element this document belongs under. Unused
	// for Frames[0] (the page). See OwnerRef.
	Owner OwnerRef `json:"owner,omitzero"`

	Viewport Viewport `json:"viewport"`
	// Unlisted counts the elements a viewport-scoped capture left out of
	// Document (zero for a full capture); page statistics add them, so
	// they describe the whole page either way.
	Unlisted Unlisted `json:"unlisted,omitzero"`
}

// Unlisted counts elements left out of a frame's Document, by kind.
type Unlisted struct {
	Elements int `json:"elements,omitempty"`
	Links    int `json:"links,omitempty"` // <a href>
	Inputs   int `json:"inputs,omitempty"`
	Images   int `json:"images,omitempty"`
}

// OwnerRef identifies the <iframe> element that hosts an out-of-process
// frame. Matching tries, in order: BackendNodeID within the target ParentTargetID
// (or any target when ParentTargetID is empty); then the iframe element whose
// DOM frameId equals FrameID (or, if FrameID is empty, FrameInput.FrameID).
type OwnerRef struct {
	ParentTargetID string                 `json:"parentTargetId,omitempty"`
	BackendNodeID  cdpproto.BackendNodeID `json:"backendNodeId,omitempty"`
	FrameID        string                 `json:"frameId,omitempty"`
}

// PageInput is the whole capture of one page: Frames[0] is the page target,
// the rest are out-of-process iframes in any order (nested OOPIFs are fine).
type PageInput struct {
	Frames []FrameInput `json:"frames"`
	// URL of the page; if empty the main document's documentURL is used.
	URL string `json:"url,omitempty"`
	// Title of the page, informational.
	Title string `json:"title,omitempty"`
	// ReadyState is document.readyState if the caller probed it ("" = unknown).
	ReadyState string `json:"readyState,omitempty"`
}

// LoadPageInput reads a PageInput from a JSON file (the fixture format:
// the fields of PageInput with getDocument/captureSnapshot/getFullAXTree
// results verbatim). It uses cdproto's JSON layer so the cdproto types decode
// exactly as they do off the wire.
func LoadPageInput(path string) (*PageInput, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dom: load page input: %w", err)
	}
	return DecodePageInput(b)
}

// DecodePageInput decodes a PageInput from JSON (see LoadPageInput).
func DecodePageInput(b []byte) (*PageInput, error) {
	var in PageInput
	if err := jsonv2.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("dom: decode page input: %w", err)
	}
	return &in, nil
}

// Options tunes Build. The zero value means the documented defaults.
type Options struct {
	// ViewportThreshold is how far (CSS px) beyond each frame's viewport, in
	// every direction, an element still counts as visible. 0 means the default 1000; a
	// negative value disables the viewport test (CSS visibility only).
	ViewportThreshold float64
	// MaxIframes bounds how many frame documents (same-process content
	// documents and OOPIFs) are stitched in. 0 means 100.
	MaxIframes int
	// MaxIframeDepth bounds iframe nesting. 0 means 5.
	MaxIframeDepth int
	// DivideBoundsByDPR divides snapshot rectangles by Viewport.DPR, for
	// captures whose layout rectangles are in device pixels.
	DivideBoundsByDPR bool
}

func (o Options) withDefaults() Options {
	if o.ViewportThreshold == 0 {
		o.ViewportThreshold = 1000
	}
	if o.MaxIframes <= 0 {
		o.MaxIframes = 100
	}
	if o.MaxIframeDepth <= 0 {
		o.MaxIframeDepth = 5
	}
	return o
}
