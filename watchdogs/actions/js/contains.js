// Reports whether hit is the element or inside it,
// crossing shadow roots (open, closed and user-agent) and same-process
// frames; it also describes hit for messages.
function(hit){
  const desc = DESCRIBE;
  let n = hit;
  for (let i = 0; n && i < 10000; i++) {
    if (n === this) return {inside: true, desc: desc(hit)};
    if (n.parentNode) n = n.parentNode;
    else if (n.host) n = n.host;
    else if (n.defaultView && n.defaultView.frameElement) n = n.defaultView.frameElement;
    else break;
  }
  return {inside: false, desc: desc(hit)};
}
