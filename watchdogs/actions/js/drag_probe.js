// A one-drag probe on the window of this node's document. "arm" starts
// listening for dragstart (capture, so the page cannot hide it); "read"
// tells whether one fired and the page let the drag go on; "done" stops
// listening.
function(mode){
  const w = (this.ownerDocument || this).defaultView;
  if (!w) return false;
  const k = '__browseragentDragStart';
  if (mode === 'arm') {
    if (w[k + 'L']) w.removeEventListener('dragstart', w[k + 'L'], true);
    w[k] = null;
    w[k + 'L'] = (e) => { w[k] = e; };
    w.addEventListener('dragstart', w[k + 'L'], true);
    return true;
  }
  if (mode === 'done') {
    if (w[k + 'L']) w.removeEventListener('dragstart', w[k + 'L'], true);
    delete w[k + 'L'];
    delete w[k];
    return true;
  }
  const e = w[k];
  return !!e && !e.defaultPrevented;
}
