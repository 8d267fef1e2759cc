// Empties a field in a way frameworks notice, then leaves the
// caret where typing continues.
function(){
  if (this.isContentEditable) {
    this.focus();
    const sel = this.ownerDocument.getSelection();
    const r = this.ownerDocument.createRange();
    r.selectNodeContents(this);
    sel.removeAllRanges(); sel.addRange(r);
    if (!this.ownerDocument.execCommand('delete', false)) this.textContent = '';
    if (this.textContent !== '') { this.textContent = ''; this.dispatchEvent(new Event('input', {bubbles: true})); }
    return;
  }
  const proto = this.localName === 'textarea' ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
  Object.getOwnPropertyDescriptor(proto, 'value').set.call(this, '');
  this.dispatchEvent(new Event('input', {bubbles: true, composed: true}));
}
