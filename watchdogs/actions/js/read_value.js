// A field's whole value for read_value: {kind, value, selected, withheld}.
// kind is "" for an element that holds no value. A password field, or one
// marked with the human-typed attribute (humanAttr), is withheld: its
// value is not read at all.
function (humanAttr) {
  const tag = this.localName;
  const editable = this.isContentEditable;
  const field = tag === 'input' || tag === 'textarea' || tag === 'select';
  if (!field && !editable) return { kind: '' };
  const type = tag === 'input' ? (this.getAttribute('type') || '').trim().toLowerCase() : '';
  if (type === 'password' || this.hasAttribute(humanAttr) || (this.closest && this.closest('[' + humanAttr + ']'))) {
    return { kind: tag, withheld: true };
  }
  if (tag === 'select') {
    const selected = [];
    for (const o of this.options) {
      if (o.selected) selected.push({ Index: o.index, Text: (o.label || o.text || '').trim(), Value: o.value, Selected: true });
    }
    return { kind: 'select', value: selected.map((o) => o.Text).join('\n'), selected };
  }
  if (tag === 'input') {
    if (type === 'checkbox' || type === 'radio') return { kind: 'input', value: this.checked ? 'checked' : 'unchecked' };
    if (type === 'file') return { kind: 'input', value: Array.from(this.files || [], (f) => f.name).join('\n') };
    return { kind: 'input', value: this.value };
  }
  if (tag === 'textarea') return { kind: 'textarea', value: this.value };
  // The whole editing host, not the child the index may name.
  let host = this;
  while (host.parentElement && host.parentElement.isContentEditable) host = host.parentElement;
  return { kind: 'contenteditable', value: host.innerText };
}
