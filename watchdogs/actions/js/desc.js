// Describes an element briefly for messages: <tag id=x>.
function(n){
  if (!n) return '?';
  if (n.nodeType !== 1) n = n.parentElement || n.host;
  if (!n || n.nodeType !== 1) return '?';
  let s = '<' + n.localName;
  if (n.id) s += ' id=' + n.id;
  else if (typeof n.className === 'string' && n.className.trim()) s += ' class=' + n.className.trim().split(/\s+/)[0];
  const nm = n.getAttribute('name'); if (nm) s += ' name=' + nm;
  const r = n.getAttribute('role'); if (r) s += ' role=' + r;
  return s + '>';
}
