// Marks the element that has focus, through same-origin frames and shadow
// roots, as typed into by a person (dom.HumanTypedAttr): the agent's
// observation then withholds its value like a password's.
(() => {
  let e = document.activeElement;
  for (;;) {
    if (e && e.shadowRoot && e.shadowRoot.activeElement) {
      e = e.shadowRoot.activeElement;
      continue;
    }
    let d = null;
    try {
      d = e && e.contentDocument;
    } catch (_) {
      // a cross-origin frame: out of reach from here
    }
    if (d && d.activeElement) {
      e = d.activeElement;
      continue;
    }
    break;
  }
  if (e && e.localName !== "body" && e.localName !== "html" && e.setAttribute) {
    e.setAttribute("data-ba-human-typed", "");
    return true;
  }
  return false;
})()
