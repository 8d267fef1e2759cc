package dom

import (
	"strings"
	"testing"
)

func TestRankedClasses(t *testing.T) {
	for _, c := range []struct{ class, want string }{
		{"ui-button ui-widget ui-spinner-button ui-spinner-up ui-corner-tr ui-button-icon-only", "ui-spinner-up"},
		{"ui-button ui-widget ui-spinner-button ui-spinner-down ui-corner-br ui-button-icon-only", "ui-spinner-down"},
		{"btn btn-sm btn-outline-secondary mt-2 d-flex", ""},
		{"btn btn-light toolbar-more is-active", "toolbar-more"},
		{"css-1x9f3ab Button_root__3fG2h sc-bdfBwQ", ""},
		{"fa fa-fw fa-paper-plane", "fa-paper-plane"},
		{"col-md-6 flex items-center card-header", "card-header"},
		{"MenuToggle", "MenuToggle"},
		{"pull-right text-left float-end fade in show", ""},
		{"modal-close pull-right", "modal-close"},
		// Font Awesome 6: the style class is no icon; the icon's name is
		// whatever follows fa-, even words that style elsewhere.
		{"fa-solid fa-trash-can", "fa-trash-can"},
		{"fa-regular fa-pen-to-square", "fa-pen-to-square"},
		{"fa-brands fa-github", "fa-github"},
		{"fa-solid fa-circle-xmark fa-lg", "fa-circle-xmark"},
		{"fa-solid fa-magnifying-glass fa-pull-right", "fa-magnifying-glass"},
		{"ui-icon ui-icon-closethick", "ui-icon-closethick"},
		{"material-icons md-18", ""},
		{"material-symbols-outlined", ""},
		{"btn-icon-only", ""},
		{"MuiIconButton-root MuiIconButton-sizeSmall", ""},
		{"inline-flex items-center rounded-md p-2 text-gray-400 hover:bg-gray-100", ""},
		{"h-6 w-6 shrink-0 text-indigo-600", ""},
	} {
		got, _ := rankedClasses(c.class, 1)
		if got != c.want {
			t.Errorf("rankedClasses(%q) = %q, want %q", c.class, got, c.want)
		}
	}
}

func TestIconWord(t *testing.T) {
	for in, want := range map[string]string{
		"#icon-trash":                      "trash",
		"/static/img/more.png":             "more",
		"ic_more_vert_24px.svg?v=3":        "more-vert",
		"sprite.svg#i-settings":            "settings",
		"https://cdn.x/icons/Close@2x.png": "close",
		"fa-trash":                         "trash",
		"fa-pen-to-square":                 "pen-to-square",
		"fa-circle-xmark":                  "circle-xmark",
		"ui-icon-circle-plus":              "circle-plus",
	} {
		if got := iconWord(in); got != want {
			t.Errorf("iconWord(%q) = %q, want %q", in, got, want)
		}
	}
	if got := cssURL(`url("data:image/svg+xml;utf8,<svg/>")`); got != "" {
		t.Errorf("data URL named %q", got)
	}
	if got := cssURL(`linear-gradient(red, blue), url("/a/b/next.svg")`); got != "next" {
		t.Errorf("cssURL with gradient = %q", got)
	}
}

// Each nameless icon button gets a hint that tells it apart.
func TestIconHintSources(t *testing.T) {
	res, _ := render(t,
		E("a", E("span").A("class", "ui-button-icon ui-icon ui-icon-triangle-1-n").At(2, 2, 16, 16)).
			A("class", "ui-button ui-widget ui-spinner-button ui-spinner-up ui-corner-tr ui-button-icon-only", "role", "button").At(0, 0, 20, 12).ID(60),
		E("a", E("span").A("class", "ui-button-icon ui-icon ui-icon-triangle-1-s").At(2, 14, 16, 16)).
			A("class", "ui-button ui-widget ui-spinner-button ui-spinner-down ui-corner-br ui-button-icon-only", "role", "button").At(0, 12, 20, 12).ID(61),
		E("button", E("svg", E("use").A("href", "#icon-trash")).At(42, 2, 16, 16)).A("class", "tb btn btn-sm").At(40, 0, 30, 30).ID(62),
		E("button").A("class", "tb btn btn-sm").At(80, 0, 30, 30).S("background-image", `url("http://h/img/more.png")`).ID(63),
		E("button", E("i").A("class", "fa fa-fw fa-star").At(122, 2, 16, 16)).A("class", "tb btn").At(120, 0, 30, 30).ID(64),
		E("button", E("svg", E("title", T("Settings")).NoLayout()).At(162, 2, 16, 16)).A("class", "tb btn").At(160, 0, 30, 30).ID(65),
		E("button").A("class", "tb btn").At(200, 0, 30, 30).Pseudo("content", `url("/i/next.svg")`).ID(66),
	)
	for idx, want := range map[string]string{
		"[60]": "hint=.ui-spinner-up", "[61]": "hint=.ui-spinner-down", "[62]": "hint=icon:trash",
		"[63]": "hint=icon:more", "[64]": "hint=icon:star", "[65]": "hint=icon:Settings",
		"[66]": "hint=icon:next",
	} {
		if l := lineWith(res.Text, idx); !strings.Contains(l, want) {
			t.Errorf("line %s = %q, want %q\n%s", idx, l, want, res.Text)
		}
	}
}
