// Seeds localStorage before the document's own scripts run: seed maps an
// origin to [key, value] pairs; the pairs of the document's origin are set
// when the key is missing. A key an earlier seed script set in this same
// document, and the page has not changed since, is set again, so the most
// recently loaded state wins over an older seed still registered in the
// tab. Errors (opaque origins, storage disabled) are ignored.
function (seed) {
  let items;
  try {
    if (!Object.prototype.hasOwnProperty.call(seed, location.origin)) return;
    items = seed[location.origin];
  } catch (e) {
    return;
  }
  const mark = Symbol.for('browseragent.seededLocalStorage');
  const seeded = globalThis[mark] || (globalThis[mark] = new Map());
  try {
    for (const [k, v] of items) {
      const cur = localStorage.getItem(k);
      if (cur === null || (seeded.has(k) && seeded.get(k) === cur)) {
        localStorage.setItem(k, v);
        seeded.set(k, v);
      }
    }
  } catch (e) {}
}
