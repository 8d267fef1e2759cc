// Returns the element to type into: the element itself, or
// the single text field inside it (a wrapper the model indexed).
function(){
  const ok = (e) => e && (e.localName === 'textarea' || e.isContentEditable ||
    (e.localName === 'input' && !['checkbox','radio','button','submit','reset','image','hidden','file'].includes((e.type||'').toLowerCase())));
  if (ok(this)) return this;
  const inner = this.querySelectorAll ? this.querySelectorAll('input,textarea,[contenteditable=""],[contenteditable=true]') : [];
  const c = Array.from(inner).filter(ok);
  if (c.length === 1) return c[0];
  if (this.localName === 'label' && ok(this.control)) return this.control;
  return null;
}
