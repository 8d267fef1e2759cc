// Finds a pattern (plain text or a regular expression) in the visible text
// of the document or of the elements a CSS selector matches, and returns
// each match with the text around it. Errors are returned, not thrown, so
// that the caller can tell the model what to fix.
function (pattern, regex, caseSensitive, contextChars, scope, maxResults) {
  let roots = [document.body || document.documentElement];
  if (scope) {
    try {
      roots = Array.from(document.querySelectorAll(scope));
    } catch (e) {
      return {error: 'invalid CSS selector ' + JSON.stringify(scope)};
    }
    if (!roots.length) return {error: 'no element matches ' + JSON.stringify(scope)};
    // A scope inside another scope would count its text twice.
    roots = roots.filter((r) => !roots.some((o) => o !== r && o.contains(r)));
  }
  let re;
  try {
    const source = regex ? pattern : pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    re = new RegExp(source, caseSensitive ? 'g' : 'gi');
  } catch (e) {
    return {error: 'invalid regular expression: ' + e.message};
  }
  const matches = [];
  let total = 0;
  for (const root of roots) {
    const text = root.innerText || root.textContent || '';
    re.lastIndex = 0;
    let m;
    while ((m = re.exec(text)) !== null) {
      if (m[0] === '') { re.lastIndex++; continue; }
      total++;
      if (matches.length < maxResults) {
        const from = Math.max(0, m.index - contextChars);
        const to = Math.min(text.length, m.index + m[0].length + contextChars);
        matches.push({
          Match: m[0],
          Before: text.slice(from, m.index),
          After: text.slice(m.index + m[0].length, to),
          CutBefore: from > 0,
          CutAfter: to < text.length,
        });
      }
    }
  }
  return {URL: location.href, Total: total, Matches: matches};
}
