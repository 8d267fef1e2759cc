// For an element with no visible box of its own: the first descendant (element or text) a person can see, which a click on lands inside it (display:contents, a zero-size wrapper); else a string saying why nothing of it can be seen.
function(){
  const desc = DESCRIBE;
  const e = this;
  if (e.nodeType !== 1) return 'it is not an element';
  if (!e.isConnected) return 'it is no longer in the page';
  const win = e.ownerDocument.defaultView;
  for (let a = e; a; a = a.parentElement || (a.getRootNode() && a.getRootNode().host) || null) {
    if (win.getComputedStyle(a).display === 'none') return a === e ? 'it is display:none' : 'it is inside ' + desc(a) + ', which is display:none';
  }
  if (win.getComputedStyle(e).visibility !== 'visible') return 'it is visibility:' + win.getComputedStyle(e).visibility;
  const sized = (r) => r.width > 1 && r.height > 1;
  const walker = e.ownerDocument.createTreeWalker(e, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(), i = 0; n && i < 1000; n = walker.nextNode(), i++) {
    if (n.nodeType === 3) {
      const p = n.parentElement;
      if (!n.data.trim() || !p || win.getComputedStyle(p).visibility !== 'visible') continue;
      const r = e.ownerDocument.createRange();
      r.selectNodeContents(n);
      if (sized(r.getBoundingClientRect())) return n;
    } else if ((!n.checkVisibility || n.checkVisibility({visibilityProperty: true, checkVisibilityCSS: true})) && sized(n.getBoundingClientRect())) {
      return n;
    }
  }
  if (e.getClientRects().length === 0) return 'it has no layout box';
  if (!sized(e.getBoundingClientRect())) return 'it has no size';
  return 'it is outside the visible part of the page';
}
