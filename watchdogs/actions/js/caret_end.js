// Puts the caret at the end so typed text appends.
function(){
  if (this.isContentEditable) {
    const sel = this.ownerDocument.getSelection();
    const r = this.ownerDocument.createRange();
    r.selectNodeContents(this); r.collapse(false);
    sel.removeAllRanges(); sel.addRange(r);
    return;
  }
  try { const n = this.value.length; this.setSelectionRange(n, n); } catch (e) {}
}
