// Scrolls this into view at another alignment (block and inline as for scrollIntoView, instantly) so that what covers it there, such as a sticky or fixed header or footer, may not. It first reports whether a person could see it at all: not if it is visibility:hidden or otherwise not rendered.
function(block, inline){
  const e = this.nodeType === 1 ? this : this.parentElement;
  if (!e) return {visible: false, why: 'it is no longer in the page'};
  if (this.nodeType === 1 && e.checkVisibility && !e.checkVisibility({visibilityProperty: true, checkVisibilityCSS: true})) {
    const v = getComputedStyle(e).visibility;
    return {visible: false, why: v !== 'visible' ? 'it is visibility:' + v : 'it is not rendered'};
  }
  if (this.nodeType !== 1) return {visible: true, scrolled: false};
  e.scrollIntoView({block, inline, behavior: 'instant'});
  return {visible: true, scrolled: true};
}
