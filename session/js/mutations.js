// Counts the document's mutations that change what it shows: elements
// added or removed (text changes alone do not count: a ticking clock does
// not look like a re-render, a list that replaced its items does), and
// attribute changes that show or hide content (a menu opened by toggling
// a class, a <details> opened, a style set to display:none). An attribute
// change counts only when the rendered text differs afterwards (the
// length of the body's innerText, which leaves out what is not shown): a
// class no rule styles, or a transform the page animates, counts nothing
// (a style change that touches no property that shows, hides or sizes
// content is not even checked).
// That check forces a layout, so it runs when the counter is read, and
// only after such an attribute changed since the last read (the first
// read takes the baseline). Runs in every new document before the page's
// scripts; the counter is read-only to the page. Idempotent.
(() => {
  if (Object.prototype.hasOwnProperty.call(window, '__browseragentMutations')) return;
  let n = 0;
  let dirty = true; // an attribute that may show or hide content changed
  let shown = -1; // the rendered text's length at the last check
  const read = () => {
    if (dirty) {
      dirty = false;
      const len = document.body ? document.body.innerText.length : 0;
      if (shown >= 0 && len !== shown) n++;
      shown = len;
    }
    return n;
  };
  Object.defineProperty(window, '__browseragentMutations', { get: read, configurable: false });
  // A style change matters only when one of these properties changed: a
  // transform or colour the page animates every frame must not make each
  // read walk the page.
  const shows = /^(display|visibility|opacity|content-visibility|height|max-height|width|max-width|clip|clip-path|overflow|overflow-x|overflow-y)$/;
  const styleProps = (text) => {
    const m = new Map();
    for (const decl of (text || '').split(';')) {
      const i = decl.indexOf(':');
      if (i > 0) {
        const k = decl.slice(0, i).trim().toLowerCase();
        if (shows.test(k)) m.set(k, decl.slice(i + 1).trim());
      }
    }
    return m;
  };
  const styleShows = (r) => {
    if (dirty) return true;
    const a = styleProps(r.oldValue), b = styleProps(r.target.getAttribute('style'));
    if (a.size !== b.size) return true;
    for (const [k, v] of a) if (b.get(k) !== v) return true;
    return false;
  };
  new MutationObserver((records) => {
    let structural = false;
    for (const r of records) {
      if (r.type === 'attributes') {
        if (r.attributeName !== 'style' || styleShows(r)) dirty = true;
        continue;
      }
      if (structural) continue;
      for (const x of r.addedNodes) if (x.nodeType === 1) { structural = true; break; }
      for (const x of r.removedNodes) if (x.nodeType === 1) { structural = true; break; }
    }
    if (structural) n++;
  }).observe(document, { childList: true, subtree: true, attributes: true, attributeOldValue: true, attributeFilter: ['class', 'style', 'hidden', 'open'] });
})();
