// The element's value: a form control's value, an editable element's text, else its text content.
function(){
  if (this.localName === 'input' || this.localName === 'textarea' || this.localName === 'select') return this.value;
  if (this.isContentEditable) return this.innerText;
  return this.textContent || '';
}
