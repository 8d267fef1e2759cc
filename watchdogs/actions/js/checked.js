// The checked state of a checkbox or radio input, or aria-checked of an ARIA checkbox, radio or switch.
function(){
  if (this.localName === 'input') return this.checked;
  return this.getAttribute('aria-checked') === 'true';
}
