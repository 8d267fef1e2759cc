// Returns the elements a CSS selector matches (in document order, at most
// maxResults, with the total), each with the attributes asked for, its
// visible text and whether it has a box. A field's live value is left
// out for a password and for a field a person typed into during a hand-off
// (data-ba-human-typed, dom.HumanTypedAttr). The elements themselves are the
// second value, so that the caller can learn their node ids.
function (selector, attributes, maxResults, withText) {
  let all;
  try {
    all = Array.from(document.querySelectorAll(selector));
  } catch (e) {
    return {error: 'invalid CSS selector ' + JSON.stringify(selector)};
  }
  const clean = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const shown = all.slice(0, maxResults);
  return {
    URL: location.href,
    Total: all.length,
    Elements: shown.map((e) => {
      const attrs = {};
      for (const a of attributes) {
        const v = e.getAttribute(a);
        if (v !== null) attrs[a] = v.length > 200 ? v.slice(0, 200) + '…' : v;
      }
      if ('value' in e && attributes.includes('value') && typeof e.value === 'string' && e.type !== 'password' && !e.hasAttribute('data-ba-human-typed')) attrs.value = e.value.slice(0, 200);
      const text = withText ? clean(e.innerText || e.textContent).slice(0, 300) : '';
      return {Tag: e.localName, Attributes: attrs, Text: text, Visible: e.getClientRects().length > 0};
    }),
    nodes: shown,
  };
}
