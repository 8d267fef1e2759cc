// The checked state of a checkbox or radio input, of a label's checkbox or radio control, or aria-checked of an ARIA checkbox, radio or switch.
function(){
  if (this.localName === 'input') return this.checked;
  if (this.localName === 'label' && !this.getAttribute('role')) return !!(this.control && this.control.checked);
  return this.getAttribute('aria-checked') === 'true';
}
