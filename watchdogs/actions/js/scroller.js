// Scrolls the nearest ancestor-or-self of this that can
// scroll in the direction asked (the document's scroller last), by dx/dy
// pixels (0: one client height/width). It reports the positions before and
// after and whether the end was reached.
function(sx, sy, amount, page){
  let dx = sx, dy = sy;
  const doc = this.ownerDocument || this;
  const root = doc.scrollingElement || doc.documentElement;
  const can = (e) => {
    if (e === root) return true;
    const st = getComputedStyle(e);
    const oy = st.overflowY, ox = st.overflowX;
    const y = dy !== 0 && (oy === 'auto' || oy === 'scroll' || oy === 'overlay') && e.scrollHeight > e.clientHeight;
    const x = dx !== 0 && (ox === 'auto' || ox === 'scroll' || ox === 'overlay') && e.scrollWidth > e.clientWidth;
    return y || x;
  };
  let e = page ? null : (this.nodeType === 1 ? this : null);
  if (page) {
    // The page scrolls unless it cannot move that way; then whatever
    // scroll container sits under the viewport's centre.
    const v = doc.defaultView;
    const maxY = root.scrollHeight - v.innerHeight, maxX = root.scrollWidth - v.innerWidth;
    const pageCan = (dy > 0 && v.scrollY < maxY - 1) || (dy < 0 && v.scrollY > 0) || (dx > 0 && v.scrollX < maxX - 1) || (dx < 0 && v.scrollX > 0);
    e = root;
    if (!pageCan && root.scrollHeight <= v.innerHeight + 1 && root.scrollWidth <= v.innerWidth + 1) {
      let c = doc.elementFromPoint(v.innerWidth / 2, v.innerHeight / 2);
      while (c && c !== root && !can(c)) c = c.parentElement;
      if (c) e = c;
    }
  } else {
    while (e && e !== root && !can(e)) e = e.parentElement || (e.getRootNode() && e.getRootNode().host) || null;
    if (!e) e = root;
  }
  const isRoot = e === root || e === doc.body;
  const v = doc.defaultView;
  const ch = isRoot ? v.innerHeight : e.clientHeight, cw = isRoot ? v.innerWidth : e.clientWidth;
  dy = sy * (amount > 0 ? amount : Math.round(ch * 0.9));
  dx = sx * (amount > 0 ? amount : Math.round(cw * 0.9));
  const pos = () => isRoot ? [v.scrollX, v.scrollY] : [e.scrollLeft, e.scrollTop];
  const [bx, by] = pos();
  if (isRoot) v.scrollBy({left: dx, top: dy, behavior: 'instant'});
  else e.scrollBy({left: dx, top: dy, behavior: 'instant'});
  const [ax, ay] = pos();
  const maxY = (isRoot ? root.scrollHeight - v.innerHeight : e.scrollHeight - e.clientHeight);
  const maxX = (isRoot ? root.scrollWidth - v.innerWidth : e.scrollWidth - e.clientWidth);
  const desc = DESCRIBE;
  return {what: isRoot ? 'page' : desc(e), bx, by, ax, ay, maxX: Math.max(0, maxX), maxY: Math.max(0, maxY)};
}
