// The scroll positions of what can scroll under a viewport point: the
// element there and its scrollable ancestors (across shadow roots), then
// the page. A wheel at the point scrolls the first one that can move.
function(x, y){
  const desc = DESCRIBE;
  const out = [];
  let n = document.elementFromPoint(x, y);
  while (n && n.nodeType === 1) {
    const cs = getComputedStyle(n);
    const oy = cs.overflowY, ox = cs.overflowX;
    const can = (o) => o === 'auto' || o === 'scroll' || o === 'overlay';
    if ((can(oy) && n.scrollHeight > n.clientHeight) || (can(ox) && n.scrollWidth > n.clientWidth)) {
      out.push({desc: desc(n), left: n.scrollLeft, top: n.scrollTop});
    }
    n = n.parentElement || (n.getRootNode() && n.getRootNode().host) || null;
  }
  const se = document.scrollingElement || document.documentElement;
  out.push({desc: 'the page', left: se.scrollLeft, top: se.scrollTop});
  return out;
}
