// Elements with JS click-like listeners that are not interactive by tag or
// attribute anyway (those need no listener to get an index).
// getEventListeners is DevTools' command-line API: the caller evaluates
// this with includeCommandLineAPI, as (function)(limit, maxHits). Pages over
// limit elements are skipped (the scan is linear and slow); at most maxHits
// elements are returned.
(limit, maxHits) => {
  const all = document.getElementsByTagName('*');
  if (all.length > limit) return [];
  const native = new Set(['A','BUTTON','INPUT','SELECT','TEXTAREA','OPTION','SUMMARY','DETAILS','LABEL','HTML','BODY']);
  const out = [];
  for (let i = 0; i < all.length; i++) {
    const el = all[i];
    if (native.has(el.tagName) || el.hasAttribute('onclick')) continue;
    const ls = getEventListeners(el);
    if (ls && (ls.click || ls.mousedown || ls.mouseup || ls.pointerdown || ls.pointerup)) {
      out.push(el);
      if (out.length >= maxHits) break;
    }
  }
  return out;
}
