package testbrowser_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/internal/testbrowser"
)

func TestMain(m *testing.M) { testbrowser.Main(m) }

// get fetches u without following redirects.
func get(t *testing.T, u string) (*http.Response, string) {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func TestServerRoutes(t *testing.T) {
	srv, err := testbrowser.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if !strings.HasPrefix(srv.URL1, "http://127.0.0.1:") || !strings.HasPrefix(srv.URL2, "http://localhost:") || srv.URL1[len("http://127.0.0.1"):] == srv.URL2[len("http://localhost"):] {
		t.Fatalf("sites %s %s", srv.URL1, srv.URL2)
	}

	// Templating: each site points at the other.
	_, body := get(t, srv.URL1+"/iframes.html")
	if !strings.Contains(body, `src="`+srv.URL2+`/frame.html?which=cross"`) || strings.Contains(body, "{{") {
		t.Fatalf("site1 iframes.html not templated:\n%s", body)
	}
	_, body = get(t, srv.URL2+"/nested-inner.html")
	if !strings.Contains(body, srv.URL1+"/frame.html") {
		t.Fatal("site2 page does not point at site1")
	}

	// Every fixture page is served.
	for _, p := range []string{"/", "/form.html", "/links.html", "/other.html", "/frame.html", "/shadow.html", "/scroll.html", "/dialogs.html", "/nested-iframes.html", "/form-submitted.html"} {
		resp, body := get(t, srv.URL1+p)
		if resp.StatusCode != 200 || !strings.Contains(body, "<title>") {
			t.Errorf("%s: %s", p, resp.Status)
		}
	}
	if resp, _ := get(t, srv.URL1+"/missing.html"); resp.StatusCode != 404 {
		t.Errorf("missing page: %s", resp.Status)
	}

	// Generated.
	resp, body := get(t, srv.URL1+"/generated?n=10")
	if resp.StatusCode != 200 || strings.Count(body, ` id="e`) != 10 ||
		!strings.Contains(body, "<button") || !strings.Contains(body, "<a ") || !strings.Contains(body, "<input") || !strings.Contains(body, "<span") {
		t.Fatalf("generated: %s\n%s", resp.Status, body)
	}
	for _, bad := range []string{"", "x", "-1", "999999999"} {
		if resp, _ := get(t, srv.URL1+"/generated?n="+bad); resp.StatusCode != 400 {
			t.Errorf("generated?n=%s: %s", bad, resp.Status)
		}
	}

	// Redirect.
	resp, _ = get(t, srv.URL1+"/redirect?to=/other.html")
	if resp.StatusCode != 302 || resp.Header.Get("Location") != "/other.html" {
		t.Fatalf("redirect: %s %q", resp.Status, resp.Header.Get("Location"))
	}
	resp, _ = get(t, srv.URL1+"/redirect?to=/other.html&status=307")
	if resp.StatusCode != 307 {
		t.Fatalf("redirect 307: %s", resp.Status)
	}
	for _, bad := range []string{"/redirect", "/redirect?to=/x&status=200", "/redirect?to=/x&status=abc"} {
		if resp, _ := get(t, srv.URL1+bad); resp.StatusCode != 400 {
			t.Errorf("%s: %s", bad, resp.Status)
		}
	}

	// Download.
	resp, body = get(t, srv.URL2+"/download?name=report.txt")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Disposition") != `attachment; filename="report.txt"` || !strings.Contains(body, "report.txt") {
		t.Fatalf("download: %s %q", resp.Status, resp.Header.Get("Content-Disposition"))
	}
	for _, bad := range []string{"", "../x", "a\"b"} {
		if resp, _ := get(t, srv.URL2+"/download?name="+bad); resp.StatusCode != 400 {
			t.Errorf("download name %q: %s", bad, resp.Status)
		}
	}

	// Request log, per site.
	if n := srv.Hits(testbrowser.Site1, "/iframes.html"); n != 1 {
		t.Fatalf("site1 iframes hits %d", n)
	}
	if n := srv.Hits(testbrowser.Site2, "/iframes.html"); n != 0 {
		t.Fatalf("site2 iframes hits %d", n)
	}
	if reqs := srv.Requests(testbrowser.Site2); len(reqs) == 0 || reqs[0] != "/nested-inner.html" {
		t.Fatalf("site2 log %v", reqs)
	}
	srv.ResetRequests()
	if len(srv.Requests(testbrowser.Site1)) != 0 || len(srv.Requests(testbrowser.Site2)) != 0 {
		t.Fatal("reset did not clear")
	}
}

func TestPageHelpers(t *testing.T) {
	env := testbrowser.Start(t)
	if env.Conn.Err() != nil {
		t.Fatal(env.Conn.Err())
	}
	if testbrowser.Start(t) != env {
		t.Fatal("Start must share one Env per package")
	}
	env.Server.ResetRequests()
	pg := env.NewPage(t, "/iframes.html")

	var title string
	pg.Eval(t, "document.title", &title)
	if title != "Iframes fixture" {
		t.Fatalf("title %q", title)
	}
	// The cross-site iframe is an OOPIF with its own session.
	var oopif int
	for _, s := range pg.OOPIFs() {
		if s.TargetInfo().Type == "iframe" {
			oopif++
			var origin string
			if err := testbrowser.Eval(s, "location.origin", &origin); err != nil || origin != env.Server.URL2 {
				t.Fatalf("OOPIF origin %q %v", origin, err)
			}
		}
	}
	if oopif != 1 {
		t.Fatalf("want 1 OOPIF, got %d", oopif)
	}
	if env.Server.Hits(testbrowser.Site2, "/frame.html") != 1 || env.Server.Hits(testbrowser.Site1, "/frame.html") != 1 {
		t.Fatalf("request logs: %v / %v", env.Server.Requests(testbrowser.Site1), env.Server.Requests(testbrowser.Site2))
	}

	// Fixture behaviour the later capabilities rely on.
	pg.Navigate(t, "/form.html")
	var form struct {
		Password string   `json:"password"`
		Country  string   `json:"country"`
		Langs    []string `json:"langs"`
		Plan     string   `json:"plan"`
		Fields   int      `json:"fields"`
	}
	pg.Eval(t, `({
		password: document.getElementById('password').value,
		country: document.getElementById('country').value,
		langs: [...document.getElementById('langs').selectedOptions].map(o => o.value),
		plan: document.querySelector('input[name=plan]:checked').value,
		fields: document.querySelectorAll('#signup input, #signup textarea, #signup select').length,
	})`, &form)
	if form.Password != "hunter2" || form.Country != "fr" || len(form.Langs) != 2 || form.Plan != "free" || form.Fields != 10 {
		t.Fatalf("form fixture: %+v", form)
	}

	pg.Navigate(t, "/shadow.html")
	var shadow struct {
		Open   bool `json:"open"`
		Closed bool `json:"closed"`
	}
	pg.Eval(t, `({
		open: !!document.getElementById('open-host').shadowRoot.getElementById('open-button'),
		closed: document.getElementById('closed-host').shadowRoot === null,
	})`, &shadow)
	if !shadow.Open || !shadow.Closed {
		t.Fatalf("shadow fixture: %+v", shadow)
	}

	pg.Navigate(t, "/scroll.html")
	var scroll struct {
		Page      bool `json:"page"`
		Container bool `json:"container"`
	}
	pg.Eval(t, `({
		page: document.documentElement.scrollHeight > window.innerHeight * 2,
		container: (c => c.scrollHeight > c.clientHeight * 2)(document.getElementById('container')),
	})`, &scroll)
	if !scroll.Page || !scroll.Container {
		t.Fatalf("scroll fixture: %+v", scroll)
	}

	pg.Navigate(t, "/generated?n=1000")
	var n int
	pg.Eval(t, "document.querySelectorAll('[id^=e]').length", &n)
	if n != 1000 {
		t.Fatalf("generated elements %d", n)
	}

	pg.Navigate(t, "/redirect?to=/other.html")
	var path string
	pg.Eval(t, "location.pathname", &path)
	if path != "/other.html" {
		t.Fatalf("redirect landed on %q", path)
	}
	// Absolute URLs pass through.
	pg.Navigate(t, env.Server.URL2+"/other.html")
	var origin string
	pg.Eval(t, "location.origin", &origin)
	if origin != env.Server.URL2 {
		t.Fatalf("origin %q", origin)
	}
}

func TestEvalErrors(t *testing.T) {
	env := testbrowser.Start(t)
	pg := env.NewPage(t, "")
	err := testbrowser.Eval(pg.Session, "throw new Error('boom')", nil)
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("want exception error, got %v", err)
	}
	var s string
	if err := testbrowser.Eval(pg.Session, "42", &s); err == nil {
		t.Fatal("want decode error for number into string")
	}
	var v int
	if err := testbrowser.Eval(pg.Session, "Promise.resolve(7)", &v); err != nil || v != 7 {
		t.Fatalf("promise: %d %v", v, err)
	}
}
