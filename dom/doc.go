// Package dom turns decoded CDP captures of a page into what the model reads.
//
// It works on plain data only — results of DOM.getDocument (depth -1,
// pierce), DOMSnapshot.captureSnapshot (computedStyles =
// RequiredComputedStyles, includePaintOrder, includeDOMRects),
// Accessibility.getFullAXTree and Page.getLayoutMetrics, as cdproto types —
// so it runs the same on a live page and on recorded fixtures
// (LoadPageInput). It imports no other browseragent package.
//
// The pipeline:
//
//	Build(PageInput) -> *Tree        merge DOM + snapshot + AX by backend node id,
//	                                 stitch shadow roots, same-process iframes and
//	                                 OOPIF documents; compute visibility
//	Serialize(Tree, prev) -> Result  simplify, paint-order filter, bounding-box
//	                                 filter, index (= backend node id), render the
//	                                 indexed text view, selector map, page stats
//	Markdown / ChunkMarkdown         page content for extraction
//	FingerprintOf, IdentityOf        cheap change detection, element identity
//
// Capturing input (the CDP caller's contract), per target:
//
//	DOM.getDocument{depth: -1, pierce: true}            -> FrameInput.Document
//	DOMSnapshot.captureSnapshot{computedStyles: RequiredComputedStyles,
//	    includePaintOrder: true, includeDOMRects: true} -> FrameInput.Snapshot
//	Accessibility.getFullAXTree (optional; once per same-
//	    process child frame too, by frameId; or partial:
//	    see AXCandidates / Tree.MergeAX)                -> FrameInput.AX
//	Page.getLayoutMetrics cssVisualViewport              -> FrameInput.Viewport
//	click-listener scan (optional)                       -> FrameInput.ClickListeners
//
// The page target goes first in PageInput.Frames; each OOPIF target follows
// with FrameID (its target id, which is also the frameId on its owner
// <iframe>) or an explicit OwnerRef. Recorded captures in this shape load
// with LoadPageInput (testdata/*.json).
//
// Text format (one line per element that is interactive, scrollable or a
// frame; other elements are transparent and their text prints at the depth
// of the nearest printed ancestor + 1):
//
//	[12]<button type=submit />          indexed element (index = backend node id)
//	*[13]<a />                          new since the previous observation
//	|scroll element[14]<div /> (0.0 pages above, 2.5 pages below)
//	|scroll element|<div /> (…)         scrollable container without an index
//	|IFRAME|<iframe />  |IFRAME|[15]<iframe />
//	... (3 more elements below - scroll to reveal):   (after an iframe's content)
//	    <button> "Send" ~1.5 pages down
//	|SHADOW(open)|[16]<my-el />         shadow host; its shadow tree is framed by
//	Open Shadow / Closed Shadow … Shadow End
//	[17]<svg /> <!-- SVG content collapsed -->
//	Some visible text
//
// Differences from the upstream format, on purpose: single-character text is
// kept; user-agent shadow roots are not shown; input/textarea values are the
// live values, exact (quoted when whitespace matters) and capped at 500;
// nameless interactive elements get hint=…; a nearby unassociated <label>
// is shown as label=…; select elements preview their options.
package dom
