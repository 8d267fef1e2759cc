// Page metadata read next to the DOM capture, and the resources still
// loading (at most 20): resource timing entries without responseEnd
// (Chrome adds most entries only once a response finished, so this rarely
// fires) and images that have a source but are not complete.
(() => {
  const pending = [];
  const add = (u) => { if (u && !u.startsWith('data:') && pending.length < 20 && !pending.includes(u)) pending.push(u); };
  try {
    for (const e of performance.getEntriesByType('resource')) {
      if (e.responseEnd === 0) add(e.name);
    }
    for (const img of document.images) {
      if (!img.complete && img.currentSrc) add(img.currentSrc);
      else if (!img.complete && img.src) add(img.src);
    }
  } catch (e) {}
  return { url: location.href, title: document.title, readyState: document.readyState,
    contentType: document.contentType, dpr: window.devicePixelRatio, pending };
})()
