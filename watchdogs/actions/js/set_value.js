// Sets a value through the native setter (so frameworks
// that track the value, like React, see the change) and fires input and
// change. It returns the value the element accepted.
function(v){
  const proto = this.localName === 'textarea' ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
  const set = Object.getOwnPropertyDescriptor(proto, 'value').set;
  set.call(this, v);
  this.dispatchEvent(new Event('input', {bubbles: true, composed: true}));
  this.dispatchEvent(new Event('change', {bubbles: true}));
  return this.value;
}
