// Reads the document's origin and its localStorage as [key, value] pairs;
// an origin without storage (opaque, sandboxed) reads as {origin: ""}.
(() => {
  try {
    return { origin: location.origin, items: Object.entries(localStorage) };
  } catch (e) {
    return { origin: '', items: [] };
  }
})()
