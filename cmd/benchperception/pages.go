package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// docServer serves the two real-document pages on loopback: Go's
// specification from GOROOT (a template fragment, wrapped as a page) and
// the generated manual.
type docServer struct {
	URL  string
	srv  *http.Server
	done sync.WaitGroup
}

func startDocServer() (*docServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/go-spec", func(w http.ResponseWriter, r *http.Request) {
		data, err := os.ReadFile(goSpecPath())
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = fmt.Fprintf(w, "<!doctype html><html><head><meta charset=utf-8><title>The Go Programming Language Specification</title></head><body>%s</body></html>", data)
	})
	manual := manualHTML(36)
	mux.HandleFunc("/manual", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(manual))
	})
	d := &docServer{URL: "http://" + l.Addr().String(), srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	d.done.Add(1)
	go func() { defer d.done.Done(); _ = d.srv.Serve(l) }()
	return d, nil
}

func (d *docServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := d.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, d.srv.Close())
	}
	d.done.Wait()
	return err
}

// goSpecPath is GOROOT's doc/go_spec.html (about 44k elements).
func goSpecPath() string { return filepath.Join(runtime.GOROOT(), "doc", "go_spec.html") }

var manualWords = strings.Fields(`the option sets a value for each request and the server returns
configuration file module default path when build cache install package runs command flag
environment variable reference section example output error handler client timeout retry`)

// manualHTML generates a manual-like page (about 19k elements with 36
// chapters): a header bar, a nested table of contents, chapters of
// sections with prose and inline code and links, highlighted code
// blocks, tables and lists — the shape of a product manual printed on
// one page. Deterministic.
func manualHTML(chapters int) string {
	var b strings.Builder
	word := 0
	words := func(n int) string {
		var s strings.Builder
		for i := 0; i < n; i++ {
			if i > 0 {
				s.WriteByte(' ')
			}
			s.WriteString(manualWords[word%len(manualWords)])
			word += 7
		}
		return s.String()
	}
	b.WriteString("<!doctype html><html><head><meta charset=utf-8><title>Manual</title><style>" +
		"body{font:15px sans-serif;margin:0}header{position:sticky;top:0;background:#eee;padding:4px}" +
		"nav#toc{float:left;width:260px}main{margin-left:280px}pre{background:#f6f6f6;padding:8px}" +
		".k{color:#a0a}.s{color:#080}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}" +
		"</style></head><body>\n<header><a href=\"/\">Home</a>")
	for i := 0; i < 12; i++ {
		fmt.Fprintf(&b, " <a href=\"/manual/top%d\">%s</a>", i, words(1))
	}
	b.WriteString(` <input type=search placeholder="Search the manual"> <button>Go</button></header>` + "\n<nav id=toc><ul>\n")
	for c := 1; c <= chapters; c++ {
		fmt.Fprintf(&b, "<li><a href=\"#ch%d\">%d. %s</a><ul>", c, c, words(3))
		for s := 1; s <= 8; s++ {
			fmt.Fprintf(&b, "<li><a href=\"#ch%d-%d\">%d.%d %s</a></li>", c, s, c, s, words(2))
		}
		b.WriteString("</ul></li>\n")
	}
	b.WriteString("</ul></nav>\n<main>\n")
	for c := 1; c <= chapters; c++ {
		fmt.Fprintf(&b, "<section id=\"ch%d\"><h2>%d. %s</h2>\n", c, c, words(4))
		for s := 1; s <= 8; s++ {
			fmt.Fprintf(&b, "<h3 id=\"ch%d-%d\">%d.%d %s</h3>\n", c, s, c, s, words(3))
			for p := 0; p < 3; p++ {
				fmt.Fprintf(&b, "<p>%s <code>%s</code> %s <a href=\"#ch%d\">%s</a> %s <em>%s</em> %s <code>--%s</code> %s <strong>%s</strong>, %s <a href=\"/ref/%d\">%s</a>.</p>\n",
					words(9), words(1), words(6), (c%chapters)+1, words(2), words(5), words(1), words(7), words(1), words(4), words(2), words(6), c*10+s, words(1))
			}
			b.WriteString("<pre><code>")
			for l := 0; l < 10; l++ {
				fmt.Fprintf(&b, "<span class=k>%s</span> <span class=s>\"%s\"</span>\n", words(1), words(2))
			}
			b.WriteString("</code></pre>\n")
			if s%2 == 0 {
				b.WriteString("<table><tbody>")
				for r := 0; r < 5; r++ {
					fmt.Fprintf(&b, "<tr><td><code>%s</code></td><td>%s</td><td>%s</td></tr>", words(1), words(2), words(5))
				}
				b.WriteString("</tbody></table>\n")
			}
			b.WriteString("<ul>")
			for l := 0; l < 5; l++ {
				fmt.Fprintf(&b, "<li>%s</li>", words(6))
			}
			b.WriteString("</ul>\n")
		}
		b.WriteString("</section>\n")
	}
	b.WriteString("</main></body></html>\n")
	return b.String()
}
