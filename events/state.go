package events

import (
	"fmt"
	"time"
)

// ScreenshotEvent asks for an image of a tab. Emitted by the agent and by
// the DOM watchdog, which dispatches it as a child of BrowserStateRequest (so
// the image in a BrowserState comes from whichever watchdog answers
// Screenshot); handled by the screenshot watchdog. The zero ImageOptions
// ask for a PNG at full size: what agent.Driver.State's screenshot (so the
// MCP state tool's screenshot option and the CLI's state command), the
// shell and the screenshot action's file get. Recordings do not take
// screenshots: they use the screencast.
type ScreenshotEvent struct {
	TargetID string // the tab; "" = the focused tab
	FullPage bool
	Clip     *Rect // page coordinates; nil = viewport (or full page)
	ImageOptions
}

// ImageFormat is a screenshot's encoding.
type ImageFormat string

// Image formats (Page.captureScreenshot's format).
const (
	ImagePNG  ImageFormat = "png"
	ImageJPEG ImageFormat = "jpeg"
	ImageWebP ImageFormat = "webp"
)

// MediaType is the format's MIME type ("image/png" for "" and unknown
// formats).
func (f ImageFormat) MediaType() string {
	switch f {
	case ImageJPEG:
		return "image/jpeg"
	case ImageWebP:
		return "image/webp"
	}
	return "image/png"
}

// Ext is the format's file extension with its dot (".png" for "").
func (f ImageFormat) Ext() string {
	switch f {
	case ImageJPEG:
		return ".jpg"
	case ImageWebP:
		return ".webp"
	}
	return ".png"
}

// ImageOptions say how a screenshot is encoded and how large it may be.
// The zero value is a lossless PNG at full size (device pixels).
type ImageOptions struct {
	// Format: ImagePNG (""), ImageJPEG or ImageWebP.
	Format ImageFormat
	// Quality is the JPEG/WebP compression quality, 1..100; 0 = the
	// browser's default (80 in Chromium). Ignored for PNG.
	Quality int
	// MaxWidth and MaxHeight bound the image, in image pixels; 0 = no bound
	// on that side. A larger capture is scaled down by the browser (never
	// up), keeping its aspect ratio; ScreenshotResult.Scale says by how
	// much.
	MaxWidth, MaxHeight int
}

// Rect is a rectangle in CSS pixels.
type Rect struct {
	X, Y, Width, Height float64
}

// ScreenshotResult is an encoded image of a tab.
type ScreenshotResult struct {
	Data      []byte // the encoded image
	MediaType string // "image/png", "image/jpeg" or "image/webp"; "" = image/png
	// Width and Height are the image's size in pixels (0 = unknown: an
	// answering watchdog that did not say).
	Width, Height int
	// Scale is image pixels per CSS pixel of the captured area, measured
	// on the image when the capture is a clip (a Clip, FullPage, or a size
	// bound): the device pixel ratio at full size, less when ImageOptions
	// shrank the image. 0 = unknown: the default viewport capture (no
	// clip, no bound) does not measure it; its image is at the device pixel
	// ratio, which its width over the viewport's CSS width gives.
	Scale    float64
	TargetID string
}

// Summary implements bus.Summarizer (no image bytes in traces).
func (r ScreenshotResult) Summary() string {
	mt := r.MediaType
	if mt == "" {
		mt = "image/png"
	}
	if r.Width > 0 {
		return fmt.Sprintf("%s %dx%d %d bytes", mt, r.Width, r.Height, len(r.Data))
	}
	return fmt.Sprintf("%s %d bytes", mt, len(r.Data))
}

// Screenshot captures the page (15 s).
var Screenshot = def[ScreenshotEvent, ScreenshotResult]("Screenshot", 15*sec)

// BrowserStateRequestEvent asks for an observation of the focused tab.
// Emitted by the agent at each step; handled by the DOM watchdog (DOM,
// selector map; it dispatches Screenshot as a child when asked).
type BrowserStateRequestEvent struct {
	IncludeDOM        bool // upstream default true: callers set it
	IncludeScreenshot bool
	// Screenshot says how the screenshot is encoded and sized (passed on
	// in the Screenshot event); the zero value is a full-size PNG.
	Screenshot ImageOptions
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
	XPath      string // relative to the document of the element's frame
	Bounds     *Rect  // viewport coordinates, nil if unknown
	// Frame names the frame whose document holds the element, stably
	// across runs (FrameID changes): "" for the page's own document, else
	// each enclosing frame from the outermost, joined by " > ", as its
	// document URL without query and fragment (the path alone when the
	// frame shares the page's origin).
	Frame string
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
	// MediaCoverage is the fraction (0..1) of the viewport covered by the
	// largest visible canvas, video, embed or object element: content the
	// element list and the text cannot show.
	MediaCoverage float64
	BuildTime     time.Duration
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
	Screenshot      []byte // the encoded image, nil if not requested or failed
	DOMText         string // the serialized page shown to the model
	Elements        map[int]ElementInfo
	Page            PageInfo
	Stats           DOMStats
	PendingRequests []string // URLs still loading
	IsPDFViewer     bool
	// PDFPages is the page count of the PDF the tab shows (IsPDFViewer),
	// when a ReadPDF handler could count them; 0 otherwise.
	PDFPages      int
	ClosedDialogs []DialogInfo // dialogs handled since the last observation
	Hints         []string     // "the page appears empty", "may still be loading"
	// Blocked are the requests the URL policy refused since the last
	// observation, by host (any tab: a refusal anywhere is news).
	Blocked     []BlockedRequests
	Error       string // DOM build failure, shown to the model as such
	Fingerprint string // page fingerprint for the mutation fence
	// ScreenshotType is Screenshot's media type ("" = image/png).
	ScreenshotType string
	// ScreenshotScale is Screenshot's image pixels per CSS pixel of the
	// viewport (0 = unknown: read the image's width against
	// Page.ViewportWidth).
	ScreenshotScale float64
	// ScreenshotWidth and ScreenshotHeight are the image's size in pixels
	// (0 = unknown).
	ScreenshotWidth, ScreenshotHeight int
	// Frames are the page's iframes and frames, in document order (nested
	// ones included), for policies that recognise a widget by where it is
	// loaded from (a CAPTCHA). Empty when the DOM was not built.
	Frames []FrameInfo
}

// FrameInfo is one frame element of an observed page.
type FrameInfo struct {
	// URL is the frame document's URL, or the element's src (made
	// absolute against its document's URL) when its document was not
	// captured.
	URL string
	// Visible reports that the frame element is rendered: laid out with a
	// non-empty box, not display:none, visibility:hidden or opacity 0. It
	// does not depend on the viewport: a frame far below the fold counts.
	Visible bool
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
