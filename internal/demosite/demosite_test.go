package demosite

import (
	"bytes"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func start(t *testing.T, v Version) *Site {
	t.Helper()
	s, err := Start(v)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func get(t *testing.T, s *Site, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(s.URL() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

var pages = []string{"/", "/about.html", "/jobs/frontend.html", "/jobs/go-engineer.html", "/jobs/sre.html", "/apply.html?job=go-engineer"}

// TestVersions checks, page by page, what each version promises (and that
// the rest of the site is the same).
func TestVersions(t *testing.T) {
	for _, v := range Versions() {
		t.Run(string(v), func(t *testing.T) {
			s := start(t, v)
			if s.Version() != v {
				t.Fatalf("Version() = %q", s.Version())
			}
			for _, p := range pages {
				code, body := get(t, s, p)
				wantCode := http.StatusOK
				if v == Closed && strings.HasPrefix(p, "/apply.html") {
					wantCode = http.StatusGone
				}
				if code != wantCode {
					t.Fatalf("%s: status %d, want %d", p, code, wantCode)
				}
				if got := strings.Contains(body, `aria-label="Announcement"`) && strings.Contains(body, "Read the news") && strings.Contains(body, ">Dismiss</button>"); got != (v == Banner) {
					t.Errorf("%s: banner with its link and button = %v", p, got)
				}
				if got := strings.Contains(body, `_k3x9"`); got != (v == Renamed) {
					t.Errorf("%s: renamed ids/classes = %v", p, got)
				}
			}
			_, index := get(t, s, "/")
			goAt, sreAt := strings.Index(index, "Senior Go Engineer</a>"), strings.Index(index, "Site Reliability Engineer</a>")
			if goAt < 0 || sreAt < 0 || (goAt > sreAt) != (v == Reordered) {
				t.Errorf("index order: Go at %d, SRE at %d", goAt, sreAt)
			}
			_, job := get(t, s, "/jobs/go-engineer.html")
			apply := strings.Contains(job, ">Apply for this job</a>")
			menu := strings.Contains(job, "<summary>More</summary>") && !strings.Contains(job, "<details open")
			switch v {
			case Closed:
				if apply || !strings.Contains(job, "This posting is closed") {
					t.Errorf("closed job page:\n%s", job)
				}
			case Menu:
				if !apply || !menu || strings.Index(job, "<summary>") > strings.Index(job, "Apply for this job") {
					t.Errorf("the Apply link is not inside a closed More menu:\n%s", job)
				}
			default:
				if !apply || menu {
					t.Errorf("job page: apply %v, menu %v", apply, menu)
				}
			}
			_, form := get(t, s, "/apply.html?job=go-engineer")
			if v == Renamed && (strings.Contains(form, `id="name"`) || !strings.Contains(form, `for="gwname_k3x9" `) && !strings.Contains(form, `for="gwname_k3x9">`) || !strings.Contains(form, `getElementById("gwapplication_k3x9")`)) {
				t.Errorf("renamed form keeps an old id or a label/script misses the new one:\n%s", form)
			}
			if v != Closed && !strings.Contains(form, `name="email"`) {
				t.Errorf("the form's field names changed:\n%s", form)
			}
		})
	}
}

func postApplication(t *testing.T, s *Site, fields map[string]string, cv bool) (int, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	if cv {
		w, _ := mw.CreateFormFile("cv", CVName)
		io.WriteString(w, CVText)
	}
	mw.Close()
	resp, err := http.Post(s.URL()+"/submit", mw.FormDataContentType(), &b)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestSubmit(t *testing.T) {
	full := map[string]string{"job": "go-engineer", "name": "Ada Lovelace", "email": "ada@example.com", "experience": "5-10", "consent": "yes"}
	for _, v := range []Version{Original, Renamed, Closed} {
		t.Run(string(v), func(t *testing.T) {
			s := start(t, v)
			code, body := postApplication(t, s, full, true)
			if v == Closed {
				if code != http.StatusGone || len(s.Applications()) != 0 {
					t.Fatalf("closed posting accepted an application: %d %s", code, body)
				}
				return
			}
			if code != http.StatusOK || !strings.Contains(body, "Application received") {
				t.Fatalf("submit: %d %s", code, body)
			}
			apps := s.Applications()
			if len(apps) != 1 || apps[0].Name != "Ada Lovelace" || apps[0].CVName != CVName || apps[0].CVSize != int64(len(CVText)) || !apps[0].Consent || apps[0].Reference == "" {
				t.Fatalf("applications %+v", apps)
			}
			if !strings.Contains(body, apps[0].Reference) {
				t.Errorf("the confirmation lacks the reference %s", apps[0].Reference)
			}
		})
	}
	t.Run("incomplete", func(t *testing.T) {
		s := start(t, Original)
		code, body := postApplication(t, s, map[string]string{"name": "Ada"}, false)
		if code != http.StatusBadRequest || !strings.Contains(body, "missing email, experience, CV, consent") || len(s.Applications()) != 0 {
			t.Fatalf("incomplete application: %d %q %d", code, body, len(s.Applications()))
		}
	})
}

func TestParseVersion(t *testing.T) {
	for _, v := range Versions() {
		if got, err := ParseVersion(string(v)); err != nil || got != v {
			t.Errorf("ParseVersion(%q) = %q, %v", v, got, err)
		}
	}
	if got, err := ParseVersion(""); err != nil || got != Original {
		t.Errorf(`ParseVersion("") = %q, %v`, got, err)
	}
	_, err := ParseVersion("nope")
	if !errors.Is(err, ErrUnknownVersion) || !strings.Contains(err.Error(), "menu") {
		t.Errorf("ParseVersion(nope): %v", err)
	}
	if _, err := Start("nope"); !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("Start(nope): %v", err)
	}
	if code := func() int {
		s := start(t, Original)
		c, _ := get(t, s, "/no-such-page.html")
		return c
	}(); code != http.StatusNotFound {
		t.Errorf("unknown page: %d", code)
	}
}

func TestScripts(t *testing.T) {
	steps := Script("/tmp/cv.txt")
	if len(steps) != 5 {
		t.Fatalf("the demo script has %d steps, want 5", len(steps))
	}
	found := false
	for _, a := range steps[2].Actions {
		if a.Name == "upload_file" && a.Params["path"] == "/tmp/cv.txt" {
			found = true
		}
	}
	if !found {
		t.Error("the script does not upload the CV path it was given")
	}
	heal := HealScript()
	if len(heal) != 1 || len(heal[0].Actions) != 1 || heal[0].Actions[0].Label != "More" {
		t.Fatalf("heal script %+v", heal)
	}
}
