package dom

import (
	"fmt"
	"strings"
)

// MarkdownOptions tunes Markdown.
type MarkdownOptions struct {
	// Links renders <a href> as [text](href); otherwise only the text.
	Links bool
	// Images renders <img alt> as ![alt](src).
	Images bool
}

var mdSkip = map[string]bool{
	"script": true, "style": true, "noscript": true, "template": true, "head": true,
	"meta": true, "link": true, "title": true, "svg": true, "canvas": true,
	"iframe": false, // content documents are rendered
}

var mdBlock = map[string]bool{
	"p": true, "div": true, "section": true, "article": true, "main": true, "header": true,
	"footer": true, "nav": true, "aside": true, "form": true, "fieldset": true,
	"figure": true, "figcaption": true, "blockquote": true, "ul": true, "ol": true,
	"dl": true, "dt": true, "dd": true, "table": true, "details": true, "summary": true,
	"address": true, "hr": true,
}

type mdWriter struct {
	b    strings.Builder
	opts MarkdownOptions
}

// Markdown renders the page content of the whole tree (all frames and open
// or closed shadow roots, visible or not) as Markdown: headings, paragraphs,
// lists, links, code blocks and tables. Scripts, styles and JSON blobs are
// dropped; runs of blank lines are collapsed.
func Markdown(t *Tree, opts MarkdownOptions) string {
	if t == nil || t.Root == nil {
		return ""
	}
	w := &mdWriter{opts: opts}
	w.node(t.Root, 0)
	return cleanMarkdown(w.b.String())
}

func (w *mdWriter) block() {
	s := w.b.String()
	if len(s) == 0 || strings.HasSuffix(s, "\n\n") {
		return
	}
	if strings.HasSuffix(s, "\n") {
		w.b.WriteByte('\n')
	} else {
		w.b.WriteString("\n\n")
	}
}

func (w *mdWriter) children(n *Node, list int) {
	n.eachChild(func(c *Node) { w.node(c, list) })
}

func (w *mdWriter) node(n *Node, list int) {
	switch n.Type {
	case TextNode:
		t := n.Value
		if isJSONBlob(t) {
			return
		}
		t = collapseSpace(t)
		if t == "" {
			return
		}
		s := w.b.String()
		if len(s) > 0 {
			last := s[len(s)-1]
			if last != '\n' && last != ' ' && last != '(' && last != '[' {
				w.b.WriteByte(' ')
			}
		}
		w.b.WriteString(t)
		return
	case DocumentNode, DocumentFragmentNode:
		w.children(n, list)
		return
	case ElementNode:
	default:
		return
	}
	if mdSkip[n.Tag] {
		return
	}
	switch n.Tag {
	case "h1", "h2", "h3", "h4", "h5", "h6":
		w.block()
		w.b.WriteString(strings.Repeat("#", int(n.Tag[1]-'0')) + " ")
		w.b.WriteString(collapseSpace(textOf(n)))
		w.block()
	case "br":
		w.b.WriteByte('\n')
	case "hr":
		w.block()
		w.b.WriteString("---")
		w.block()
	case "a":
		txt := collapseSpace(textOf(n))
		href := strings.TrimSpace(n.Attr("href"))
		if w.opts.Links && href != "" && !strings.HasPrefix(href, "javascript:") {
			if txt == "" {
				txt = href
			}
			w.inline(fmt.Sprintf("[%s](%s)", txt, href))
		} else if txt != "" {
			w.inline(txt)
		}
	case "img":
		if w.opts.Images {
			if alt := strings.TrimSpace(n.Attr("alt")); alt != "" {
				w.inline(fmt.Sprintf("![%s](%s)", alt, n.Attr("src")))
			}
		}
	case "pre":
		w.block()
		w.b.WriteString("```\n")
		w.b.WriteString(strings.Trim(rawText(n), "\n"))
		w.b.WriteString("\n```")
		w.block()
	case "code":
		w.inline("`" + collapseSpace(textOf(n)) + "`")
	case "strong", "b":
		if t := collapseSpace(textOf(n)); t != "" {
			w.inline("**" + t + "**")
		}
	case "em", "i":
		if t := collapseSpace(textOf(n)); t != "" {
			w.inline("*" + t + "*")
		}
	case "li":
		s := w.b.String()
		if len(s) > 0 && !strings.HasSuffix(s, "\n") {
			w.b.WriteByte('\n')
		}
		w.b.WriteString(strings.Repeat("  ", maxInt(list-1, 0)) + "- ")
		w.children(n, list)
		w.b.WriteByte('\n')
	case "ul", "ol":
		w.block()
		w.children(n, list+1)
		w.block()
	case "table":
		w.block()
		w.table(n)
		w.block()
	case "input", "textarea", "select", "button", "option":
		// Form widgets carry no page content; their text is the UI.
		if n.Tag == "button" || n.Tag == "option" {
			w.children(n, list)
		}
	default:
		if mdBlock[n.Tag] {
			w.block()
			w.children(n, list)
			w.block()
			return
		}
		w.children(n, list)
	}
}

func (w *mdWriter) inline(s string) {
	cur := w.b.String()
	if len(cur) > 0 {
		last := cur[len(cur)-1]
		if last != '\n' && last != ' ' {
			w.b.WriteByte(' ')
		}
	}
	w.b.WriteString(s)
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

func (w *mdWriter) table(n *Node) {
	var rows [][]string
	var rec func(*Node)
	rec = func(c *Node) {
		if c.Type != ElementNode {
			return
		}
		if c.Tag == "tr" {
			var cells []string
			for _, td := range c.Children {
				if td.Tag == "td" || td.Tag == "th" {
					cells = append(cells, strings.ReplaceAll(collapseSpace(textOf(td)), "|", "\\|"))
				}
			}
			rows = append(rows, cells)
			return
		}
		for _, k := range c.Children {
			rec(k)
		}
	}
	rec(n)
	if len(rows) == 0 {
		return
	}
	cols := 0
	for _, r := range rows {
		cols = maxInt(cols, len(r))
	}
	for i, r := range rows {
		for len(r) < cols {
			r = append(r, "")
		}
		w.b.WriteString("| " + strings.Join(r, " | ") + " |\n")
		if i == 0 {
			w.b.WriteString("|" + strings.Repeat(" --- |", cols) + "\n")
		}
	}
}

// textOf is the text content of n (scripts and styles excluded).
func textOf(n *Node) string {
	var b strings.Builder
	var rec func(*Node)
	rec = func(c *Node) {
		switch c.Type {
		case TextNode:
			if !isJSONBlob(c.Value) {
				b.WriteString(c.Value)
				b.WriteByte(' ')
			}
		case ElementNode:
			if mdSkip[c.Tag] {
				return
			}
			c.eachChild(rec)
		default:
			c.eachChild(rec)
		}
	}
	n.eachChild(rec)
	return b.String()
}

func rawText(n *Node) string {
	var b strings.Builder
	var rec func(*Node)
	rec = func(c *Node) {
		if c.Type == TextNode {
			b.WriteString(c.Value)
			return
		}
		c.eachChild(rec)
	}
	n.eachChild(rec)
	return b.String()
}

// isJSONBlob spots serialized state dumped into text (hydration data).
func isJSONBlob(s string) bool {
	t := strings.TrimSpace(s)
	if len(t) < 80 {
		return false
	}
	if (t[0] == '{' && t[len(t)-1] == '}') || (t[0] == '[' && t[len(t)-1] == ']') {
		return strings.Count(t, "\":") >= 3
	}
	return false
}

func cleanMarkdown(s string) string {
	lines := strings.Split(s, "\n")
	out := make([]string, 0, len(lines))
	blank := 0
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if strings.TrimSpace(l) == "" {
			blank++
			if blank > 2 {
				continue
			}
			l = ""
		} else {
			blank = 0
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// DefaultChunkChars is the default Markdown chunk size.
const DefaultChunkChars = 100000

// Chunk is one piece of a long Markdown document.
type Chunk struct {
	Text  string
	Start int // byte offset of Text in the whole document
	End   int
	Total int // length of the whole document
	// Next is the offset to ask for next, or -1 when this is the last chunk.
	Next int
}

// ChunkMarkdown returns the chunk of md that starts at start (a byte
// offset, normally a previous Chunk.Next), at most max bytes (0 means
// DefaultChunkChars). It cuts at a heading, blank line or line end when one
// is in the last fifth of the window. A chunk that is not the last ends with a
// pointer line telling where the next one starts.
func ChunkMarkdown(md string, start, max int) Chunk {
	if max <= 0 {
		max = DefaultChunkChars
	}
	if start < 0 {
		start = 0
	}
	if start > len(md) {
		start = len(md)
	}
	c := Chunk{Start: start, Total: len(md), Next: -1}
	rest := md[start:]
	if len(rest) <= max {
		c.Text, c.End = rest, len(md)
		return c
	}
	const pointerRoom = 120
	limit := max - pointerRoom
	if limit < 1 {
		limit = 1
	}
	window := rest[:limit]
	cut := -1
	floor := limit * 4 / 5
	if i := strings.LastIndex(window, "\n#"); i >= floor {
		cut = i + 1
	} else if i := strings.LastIndex(window, "\n\n"); i >= floor {
		cut = i + 2
	} else if i := strings.LastIndexByte(window, '\n'); i >= floor {
		cut = i + 1
	} else {
		cut = len(truncRunes(window, limit))
		if cut == 0 {
			cut = limit
		}
	}
	c.End = start + cut
	c.Next = c.End
	pointer := fmt.Sprintf("\n\n[... %d more characters; continue with start_from_char=%d]", len(md)-c.End, c.End)
	c.Text = rest[:cut] + pointer
	if len(c.Text) > max {
		c.Text = c.Text[:max]
	}
	return c
}
