// Finds the innermost visible element whose text contains
// the text (exact, then case-insensitive, whitespace-normalised) and
// scrolls it to the centre. The text arrives as an argument, never as code.
function(text, dir){
  const doc = this;
  const norm = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const want = norm(text), low = want.toLowerCase();
  const vis = (e) => e.checkVisibility ? e.checkVisibility({visibilityProperty: true, opacityProperty: true}) : e.getClientRects().length > 0;
  const hits = (exact) => {
    const out = [];
    const walk = doc.createTreeWalker(doc.body || doc.documentElement, NodeFilter.SHOW_TEXT);
    const seen = new Set();
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      let e = n.parentElement;
      if (!e || seen.has(e)) continue;
      // Climb until the element's text holds the whole phrase (it may span
      // inline children).
      for (let k = 0; e && k < 6; k++) {
        const t = norm(e.textContent);
        if (exact ? t.includes(want) : t.toLowerCase().includes(low)) break;
        e = e.parentElement;
        if (!e || e === doc.body) { e = null; break; }
      }
      if (!e || seen.has(e)) continue;
      seen.add(e);
      if (vis(e)) out.push(e);
    }
    return out;
  };
  let found = hits(true);
  if (!found.length) found = hits(false);
  if (!found.length) return {found: false};
  const v = doc.defaultView;
  let pick = found[0];
  if (dir === 'up') {
    const above = found.filter((e) => e.getBoundingClientRect().bottom < 0);
    if (above.length) pick = above[above.length - 1];
  } else {
    const below = found.filter((e) => e.getBoundingClientRect().top > v.innerHeight);
    const inView = found.filter((e) => { const r = e.getBoundingClientRect(); return r.top >= 0 && r.bottom <= v.innerHeight; });
    if (inView.length) pick = inView[0]; else if (below.length) pick = below[0];
  }
  const by = v.scrollY;
  pick.scrollIntoView({block: 'center', inline: 'nearest', behavior: 'instant'});
  const desc = DESCRIBE;
  return {found: true, desc: desc(pick), moved: v.scrollY !== by, count: found.length};
}
