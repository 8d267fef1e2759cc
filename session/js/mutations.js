// Counts structural mutations (elements added or removed) of the document,
// not text changes: a ticking clock does not look like a re-render, a list
// that replaced its items does. Runs in every new document before the
// page's scripts; the counter is read-only to the page. Idempotent.
(() => {
  if (Object.prototype.hasOwnProperty.call(window, '__browseragentMutations')) return;
  let n = 0;
  Object.defineProperty(window, '__browseragentMutations', { get: () => n, configurable: false });
  new MutationObserver((records) => {
    for (const r of records) {
      for (const x of r.addedNodes) if (x.nodeType === 1) { n++; return; }
      for (const x of r.removedNodes) if (x.nodeType === 1) { n++; return; }
    }
  }).observe(document, { childList: true, subtree: true });
})();
