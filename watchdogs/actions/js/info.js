// What an action needs to know about an element, in one call: attached, tag, type, role, checked state, a short description, inside a link, editable.
function(){
  const desc = DESCRIBE;
  const e = this;
  const el = e.nodeType === 1;
  const type = el ? (e.getAttribute('type') || '').toLowerCase() : '';
  const tag = el ? e.localName : e.nodeName.toLowerCase();
  return {
    connected: e.isConnected,
    tag, type,
    role: el ? (e.getAttribute('role') || '') : '',
    checked: (tag === 'input' && (type === 'checkbox' || type === 'radio')) || (el && (e.getAttribute('role') === 'checkbox' || e.getAttribute('role') === 'radio' || e.getAttribute('role') === 'switch'))
      ? (tag === 'input' ? e.checked : e.getAttribute('aria-checked') === 'true') : null,
    desc: desc(e),
    link: !!(el && e.closest('a[href]')),
    editable: !!(el && e.isContentEditable),
  };
}
