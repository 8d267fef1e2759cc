// What an action needs to know about an element, in one call: attached, tag, type, role, checked state (of a label: its checkbox or radio control's), a short description, inside a link, editable, and whether it is a checkbox or radio input a person cannot see but whose label they can.
function(){
  const desc = DESCRIBE;
  const visibleLabel = VISIBLE_LABEL;
  const e = this;
  const el = e.nodeType === 1;
  const type = el ? (e.getAttribute('type') || '').toLowerCase() : '';
  const tag = el ? e.localName : e.nodeName.toLowerCase();
  const role = el ? (e.getAttribute('role') || '') : '';
  const box = tag === 'input' && (type === 'checkbox' || type === 'radio');
  const c = tag === 'label' ? e.control : null;
  const ctl = c && c.localName === 'input' && (c.type === 'checkbox' || c.type === 'radio') ? c : null;
  // Visually hidden the usual ways: display:none, visibility:hidden,
  // opacity 0, 1px or clipped, or moved off the page.
  const hidden = (n) => {
    if (n.checkVisibility && !n.checkVisibility({visibilityProperty: true, checkVisibilityCSS: true, opacityProperty: true, checkOpacity: true})) return true;
    const r = n.getBoundingClientRect();
    if (r.width <= 1 || r.height <= 1) return true;
    const st = getComputedStyle(n);
    if (st.clip !== 'auto' || st.clipPath !== 'none') return true;
    const v = n.ownerDocument.defaultView;
    return r.right + v.scrollX <= 0 || r.bottom + v.scrollY <= 0;
  };
  return {
    connected: e.isConnected,
    tag, type, role,
    checked: box ? e.checked
      : (el && (role === 'checkbox' || role === 'radio' || role === 'switch')) ? e.getAttribute('aria-checked') === 'true'
      : ctl ? ctl.checked : null,
    control: ctl ? ctl.type : '',
    hiddenControl: box && e.isConnected && hidden(e) && !!visibleLabel(e),
    desc: desc(e),
    link: !!(el && e.closest('a[href]')),
    editable: !!(el && e.isContentEditable),
  };
}
