package mcpserver

import "github.com/modelcontextprotocol/go-sdk/mcp"

// The drag and read_pdf tools.

type (
	dragIn struct {
		Index   int      `json:"index" jsonschema:"element index of what to drag"`
		ToIndex *int     `json:"to_index,omitempty" jsonschema:"element index to drop it on"`
		DX      *float64 `json:"dx,omitempty" jsonschema:"or drag by this many CSS pixels right (negative: left)"`
		DY      *float64 `json:"dy,omitempty" jsonschema:"and down (negative: up)"`
	}
	readPDFIn struct {
		Page  int    `json:"page,omitempty" jsonschema:"one page, from 1"`
		Pages string `json:"pages,omitempty" jsonschema:"a range such as 2-4 (default: every page, capped)"`
	}
)

// addPointerTools adds drag and read_pdf.
func (s *Server) addPointerTools() {
	addTool(s, &mcp.Tool{Name: "drag", Description: "Drag an element onto another, or by an offset, with real mouse (and HTML5 drag) events: sliders, sortable lists, boards."}, func(in dragIn) handler {
		p := map[string]any{"index": in.Index}
		if in.ToIndex != nil {
			p["to_index"] = *in.ToIndex
		}
		if in.DX != nil {
			p["dx"] = *in.DX
		}
		if in.DY != nil {
			p["dy"] = *in.DY
		}
		return action("drag", p)
	})
	addTool(s, &mcp.Tool{Name: "read_pdf", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}, Description: "The text of the PDF the tab shows, page by page (state says when a tab shows a PDF, and its page count)."}, func(in readPDFIn) handler {
		p := map[string]any{}
		if in.Page != 0 {
			p["page"] = in.Page
		}
		if in.Pages != "" {
			p["pages"] = in.Pages
		}
		return action("read_pdf", p)
	})
}
