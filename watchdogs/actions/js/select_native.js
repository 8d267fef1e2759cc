// Selects this <option> of a native <select> (adding it to a multiple select's selection) and fires input and change.
function(i){
  const o = this, sel = o.closest('select');
  if (sel.multiple) o.selected = true; else sel.selectedIndex = o.index;
  sel.dispatchEvent(new Event('input', {bubbles: true, composed: true}));
  sel.dispatchEvent(new Event('change', {bubbles: true}));
  return o.selected;
}
