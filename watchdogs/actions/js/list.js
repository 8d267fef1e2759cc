// Finds a dropdown's options: a native <select> (the element,
// its label's control, or the single select inside it), or an ARIA
// combobox/listbox (role=option elements in the listbox it controls or
// owns, or inside it). With pick >= 0 it returns that option's element
// instead of the list.
function(pick){
  const e = this;
  let sel = null;
  if (e.localName === 'select') sel = e;
  else if (e.localName === 'label' && e.control && e.control.localName === 'select') sel = e.control;
  else if (!e.getAttribute('role') && e.querySelectorAll) { const s = e.querySelectorAll('select'); if (s.length === 1) sel = s[0]; }
  const clean = (s) => (s || '').replace(/\s+/g, ' ').trim();
  if (sel) {
    if (pick >= 0) return sel.options[pick] || null;
    return {kind: 'native', multiple: sel.multiple, options: Array.from(sel.options).map((o, i) => ({index: i, text: clean(o.text), value: o.value, selected: o.selected, disabled: o.disabled}))};
  }
  const role = (e.getAttribute('role') || '').toLowerCase();
  const doc = e.ownerDocument;
  let list = null;
  if (role === 'listbox') list = e;
  if (!list) {
    const ids = ((e.getAttribute('aria-controls') || '') + ' ' + (e.getAttribute('aria-owns') || '')).split(/\s+/).filter(Boolean);
    for (const id of ids) { const l = doc.getElementById(id); if (l) { list = l; break; } }
  }
  if (!list) { const l = e.querySelector('[role=listbox]'); if (l) list = l; }
  if (!list && e.querySelector('[role=option]')) list = e;
  const aria = role === 'combobox' || role === 'listbox' || !!e.getAttribute('aria-haspopup') || !!list;
  const opts = list ? Array.from(list.querySelectorAll('[role=option]')) : [];
  if (pick >= 0) return opts[pick] || null;
  return {kind: aria ? 'aria' : 'none', expanded: e.getAttribute('aria-expanded'), multiple: !!list && list.getAttribute('aria-multiselectable') === 'true',
    options: opts.map((o, i) => ({index: i, text: clean(o.innerText || o.textContent), value: o.getAttribute('data-value') || o.getAttribute('value') || o.id || '', selected: o.getAttribute('aria-selected') === 'true', disabled: o.getAttribute('aria-disabled') === 'true', visible: o.getClientRects().length > 0}))};
}
