package session

import (
	"context"
	"fmt"

	cdpproto "github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/runtime"
)

// mutationCounterJS runs in every new document before the page's scripts. It
// counts structural mutations (elements added or removed), not text changes,
// so a ticking clock does not look like a re-render but a list that replaced
// its items does. The counter is read-only to the page.
const mutationCounterJS = `(() => {
  if (Object.prototype.hasOwnProperty.call(window, '__browseragentMutations')) return;
  let n = 0;
  Object.defineProperty(window, '__browseragentMutations', { get: () => n, configurable: false });
  new MutationObserver((records) => {
    for (const r of records) {
      for (const x of r.addedNodes) if (x.nodeType === 1) { n++; return; }
      for (const x of r.removedNodes) if (x.nodeType === 1) { n++; return; }
    }
  }).observe(document, { childList: true, subtree: true });
})()`

// fingerprintJS reads the cheap page fingerprint in one evaluation. It
// installs the counter first when the document predates the session.
const fingerprintJS = `(() => {
  ` + mutationCounterJS + `;
  return { url: location.href, mutations: window.__browseragentMutations, elements: document.getElementsByTagName('*').length, title: document.title };
})()`

// PageFingerprint is a cheap summary of a page, read in one CDP round trip
// after every action: URL, number of structural mutations since the document
// loaded, and element count. Two fingerprints differ when the page navigated
// or re-rendered.
type PageFingerprint struct {
	URL       string `json:"url"`
	Mutations int64  `json:"mutations"`
	Elements  int64  `json:"elements"`
	Title     string `json:"title"`
}

// String is a compact form for evidence and traces.
func (f PageFingerprint) String() string {
	return fmt.Sprintf("%s#m%d/e%d", f.URL, f.Mutations, f.Elements)
}

// Changed reports whether the page navigated or its structure changed
// between f and g.
func (f PageFingerprint) Changed(g PageFingerprint) bool {
	return f.URL != g.URL || f.Mutations != g.Mutations || f.Elements != g.Elements
}

// Fingerprint reads the fingerprint of a tab ("" = focused).
func (s *Session) Fingerprint(ctx context.Context, tabID string) (PageFingerprint, error) {
	var fp PageFingerprint
	cs, err := s.PageSession(tabID)
	if err != nil {
		return fp, err
	}
	res, err := cdpproto.Call(ctx, cs, runtime.Evaluate, runtime.EvaluateParams{Expression: fingerprintJS, ReturnByValue: ptr(true)})
	if err != nil {
		return fp, fmt.Errorf("session: fingerprint: %w", err)
	}
	if res.ExceptionDetails != nil {
		return fp, fmt.Errorf("session: fingerprint: %s", res.ExceptionDetails.Text)
	}
	if res.Result == nil {
		return fp, fmt.Errorf("session: fingerprint: no result")
	}
	if err := unmarshalValue(res.Result.Value, &fp); err != nil {
		return fp, fmt.Errorf("session: fingerprint: %w", err)
	}
	return fp, nil
}

// unmarshalValue decodes a RemoteObject's JSON value.
func unmarshalValue(v jsonv2.Value, out any) error {
	if len(v) == 0 {
		return fmt.Errorf("empty value")
	}
	return jsonv2.Unmarshal(v, out)
}

func ptr[T any](v T) *T { return &v }
