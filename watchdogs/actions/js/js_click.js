// Clicks the element with JavaScript: the fallback for an element a real pointer cannot reach.
function(){
  if (typeof this.click === 'function') this.click();
  else this.dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true, composed: true, view: window}));
}
