// Sets a value through the native setter (so frameworks
// that track the value, like React, see the change) and fires input and
// change when the value changed (as a picker does). It returns the value
// before and the value the element accepted.
function(v){
  const proto = this.localName === 'textarea' ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
  const set = Object.getOwnPropertyDescriptor(proto, 'value').set;
  const old = this.value;
  set.call(this, v);
  if (this.value !== old) {
    this.dispatchEvent(new Event('input', {bubbles: true, composed: true}));
    this.dispatchEvent(new Event('change', {bubbles: true}));
  }
  return {old, value: this.value};
}
