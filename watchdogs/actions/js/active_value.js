// The value of the element that has focus (through shadow roots), and whether it is a password field.
(() => {
  let e = document.activeElement;
  while (e && e.shadowRoot && e.shadowRoot.activeElement) e = e.shadowRoot.activeElement;
  if (!e) return {value: '', password: false};
  const v = ('value' in e && typeof e.value === 'string') ? e.value : (e.isContentEditable ? e.innerText : '');
  return {value: v, password: (e.type || '') === 'password'};
})()
