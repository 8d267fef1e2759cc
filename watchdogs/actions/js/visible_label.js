// The first label of a checkbox or radio input that a person can see and click, or null.
function(input){
  const opts = {visibilityProperty: true, checkVisibilityCSS: true, opacityProperty: true, checkOpacity: true};
  for (const l of Array.from(input.labels || [])) {
    if (l.checkVisibility && !l.checkVisibility(opts)) continue;
    const r = l.getBoundingClientRect();
    if (r.width > 1 && r.height > 1) return l;
  }
  return null;
}
