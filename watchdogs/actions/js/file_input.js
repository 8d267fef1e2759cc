// Finds the file input an element stands for: itself,
// its label's control, one inside it, one it names (for, aria-controls), or
// the only one in a close ancestor (a styled button next to a hidden input).
function(){
  const isF = (x) => x && x.localName === 'input' && (x.type || '').toLowerCase() === 'file';
  if (isF(this)) return this;
  if (this.localName === 'label' && isF(this.control)) return this.control;
  const inner = this.querySelector && this.querySelector('input[type=file]');
  if (inner) return inner;
  const doc = this.ownerDocument;
  for (const a of ['for', 'aria-controls', 'data-for']) {
    const id = this.getAttribute && this.getAttribute(a);
    if (id) { const x = doc.getElementById(id); if (isF(x)) return x; }
  }
  let p = this.parentElement;
  for (let i = 0; p && i < 3; i++, p = p.parentElement) {
    const fs = p.querySelectorAll('input[type=file]');
    if (fs.length === 1) return fs[0];
    if (fs.length > 1) break;
  }
  return null;
}
