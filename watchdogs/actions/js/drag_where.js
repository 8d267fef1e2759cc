// Where the dragged element is, in its document's coordinates, and the
// value it shows (a slider's aria-valuenow or value): the drag's own
// evidence, since moving a thumb or a card may change no structure.
function(){
  if (!this.isConnected) return {gone: true};
  const w = this.ownerDocument.defaultView || window;
  const r = this.getBoundingClientRect();
  const v = this.getAttribute('aria-valuenow') ?? (typeof this.value === 'string' ? this.value : '');
  return {x: r.left + w.scrollX, y: r.top + w.scrollY, parent: this.parentNode ? DESCRIBE(this.parentNode) : '', value: String(v ?? '')};
}
