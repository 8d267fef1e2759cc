package events

import (
	"fmt"
	"time"
)

// ScreenshotEvent asks for a PNG of a tab. Emitted by the agent and by the
// DOM watchdog, which dispatches it as a child of BrowserStateRequest (so
// the image in a BrowserState comes from whichever watchdog answers
// Screenshot); handled by the screenshot watchdog.
type ScreenshotEvent struct {
	TargetID string // the tab; "" = the focused tab
	FullPage bool
	Clip     *Rect // page coordinates; nil = viewport (or full page)
}

// Rect is a rectangle in CSS pixels.
type Rect struct {
	X, Y, Width, Height float64
}

// ScreenshotResult is a PNG image.
type ScreenshotResult struct {
	PNG      []byte
	TargetID string
}

// Summary implements bus.Summarizer (no image bytes in traces).
func (r ScreenshotResult) Summary() string { return fmt.Sprintf("png %d bytes", len(r.PNG)) }

// Screenshot captures the page (15 s).
var Screenshot = def[ScreenshotEvent, ScreenshotResult]("Screenshot", 15*sec)

// BrowserStateRequestEvent asks for an observation of the focused tab.
// Emitted by the agent at each step; handled by the DOM watchdog (DOM,
// selector map; it dispatches Screenshot as a child when asked).
type BrowserStateRequestEvent struct {
	IncludeDOM        bool // upstream default true: callers set it
	IncludeScreenshot bool
}

// ElementInfo is one indexed (interactive) element of an observation: its
// address (ElementRef) and what the model was told about it.
type ElementInfo struct {
	Index int
	ElementRef
	Tag        string
	Role       string
	Name       string // accessible name
	Attributes map[string]string
	XPath      string
	Bounds     *Rect // viewport coordinates, nil if unknown
}

// PageInfo is the page geometry of an observation.
type PageInfo struct {
	ViewportWidth, ViewportHeight int
	PageWidth, PageHeight         int
	ScrollX, ScrollY              int
	PixelsAbove, PixelsBelow      int
	PixelsLeft, PixelsRight       int
}

// DOMStats are counts and timings of the DOM build.
type DOMStats struct {
	Nodes            int
	Interactive      int
	Iframes          int
	Links            int
	Inputs           int
	ScrollContainers int
	BuildTime        time.Duration
}

// DialogInfo is a JavaScript dialog the runtime handled.
type DialogInfo struct {
	Type     string // alert, confirm, prompt, beforeunload
	Message  string
	URL      string
	Accepted bool
}

// BrowserState is one observation. It holds plain data (no dom types) so that
// events depends only on bus.
type BrowserState struct {
	URL             string
	Title           string
	Tabs            []TabInfo
	FocusedTarget   string
	Screenshot      []byte // PNG, nil if not requested or failed
	DOMText         string // the serialized page shown to the model
	Elements        map[int]ElementInfo
	Page            PageInfo
	Stats           DOMStats
	PendingRequests []string // URLs still loading
	IsPDFViewer     bool
	ClosedDialogs   []DialogInfo // dialogs handled since the last observation
	Hints           []string     // "the page appears empty", "may still be loading"
	// Blocked are the requests the URL policy refused since the last
	// observation, by host (any tab: a refusal anywhere is news).
	Blocked     []BlockedRequests
	Error       string // DOM build failure, shown to the model as such
	Fingerprint string // page fingerprint for the mutation fence
}

// Summary implements bus.Summarizer (no page text or image in traces).
func (s BrowserState) Summary() string {
	if s.Error != "" {
		return fmt.Sprintf("%s: %d elements, error: %s", s.URL, len(s.Elements), s.Error)
	}
	return fmt.Sprintf("%s: %d elements, %d tabs", s.URL, len(s.Elements), len(s.Tabs))
}

// BrowserStateRequest asks for an observation (30 s).
var BrowserStateRequest = def[BrowserStateRequestEvent, BrowserState]("BrowserStateRequest", 30*sec)

// PageTextEvent asks for a tab's visible text (document.body.innerText),
// read fresh from the page (never a cached tree, so a click followed by
// extract reads the page after the click). Emitted by the agent's extract
// action; handled by the DOM watchdog.
type PageTextEvent struct {
	TargetID string // "" = the focused tab
}

// PageTextResult is a page's text.
type PageTextResult struct {
	URL, Title, Text string
}

// Summary implements bus.Summarizer (no page text in traces).
func (r PageTextResult) Summary() string { return fmt.Sprintf("%s: %d chars", r.URL, len(r.Text)) }

// PageText reads a page's text (30 s).
var PageText = def[PageTextEvent, PageTextResult]("PageText", 30*sec)
