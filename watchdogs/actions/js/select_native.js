// Selects this <option> of a native <select>: on a multiple select it is added to the selection, or with clear becomes the only selected option. Input and change fire once, after the whole change. Returns whether the option is selected and the texts of the options deselected.
function(clear){
  const o = this, sel = o.closest('select');
  const deselected = [];
  if (sel.multiple) {
    if (clear) {
      for (const x of Array.from(sel.options)) {
        if (x !== o && x.selected) { x.selected = false; deselected.push((x.text || '').replace(/\s+/g, ' ').trim()); }
      }
    }
    o.selected = true;
  } else sel.selectedIndex = o.index;
  sel.dispatchEvent(new Event('input', {bubbles: true, composed: true}));
  sel.dispatchEvent(new Event('change', {bubbles: true}));
  return {selected: o.selected, deselected};
}
