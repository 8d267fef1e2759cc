// The unchanged probe, evaluated in the DOM watchdog's isolated world of a
// target's main frame (one world per document, kept between
// observations). On first use in a document it installs, out of the
// page's sight: a MutationObserver (attributes, characterData, childList,
// subtree) on the document, on every open shadow root and on every
// same-process frame's document, found again whenever nodes are added;
// and capturing listeners for what changes the view without a mutation
// (typing, focus, hover, image loads, popover toggles, animations, web
// fonts). Each call returns a signature string: equal signatures mean that nothing it watches changed in between.
// fresh is true when this call installed the watch (a new document, or
// one never probed): its signature is a baseline, not evidence.
// remote counts the iframes it cannot enter (other processes: the caller
// probes their targets). It first waits for the next animation frame (at
// most 500 ms: a loaded machine draws late), when Chrome fires the scroll events still pending: an
// element that ever scrolled is remembered, and the scroll offsets of those
// are compared with the previous call's (reading every element's offsets
// cost seconds on a 50k-element page). No frame (a hidden tab, or one
// behind another that draws none) leaves pending scrolls unknown: fresh.
(async () => {
  // A hidden document draws no frames: do not wait for one.
  const framed = !document.hidden && await new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), 500);
    requestAnimationFrame(() => { clearTimeout(t); resolve(true); });
  });
  const KEY = '__browseragentUnchanged';
  let st = globalThis[KEY];
  let fresh = false;
  const events = ['input', 'change', 'focusin', 'focusout', 'mouseover', 'mouseout',
    'pointerdown', 'pointerup', 'keydown', 'keyup', 'click', 'load', 'error', 'toggle', 'beforetoggle',
    'transitionend', 'transitionstart', 'animationstart', 'animationend', 'fullscreenchange', 'select',
    'reset', 'submit', 'play', 'pause', 'ended', 'durationchange'];
  if (!st) {
    fresh = true;
    st = globalThis[KEY] = {
      token: Math.random().toString(36).slice(2),
      changes: 0,
      roots: new WeakSet(), // documents and shadow roots observed
      shadows: [], // WeakRefs to the open shadow roots observed
      scrollers: new Set(), // elements that fired a scroll event
      observers: [],
    };
    const onMutations = (records) => {
      st.changes += records.length;
      for (const r of records) {
        for (const n of r.addedNodes) scan(n);
      }
    };
    const onEvent = () => { st.changes++; };
    const onScroll = (e) => { if (e.target && e.target.nodeType === 1) st.scrollers.add(e.target); };
    const watch = (root) => {
      if (!root || st.roots.has(root)) return;
      st.roots.add(root);
      if (root.nodeType === 11) st.shadows.push(new WeakRef(root));
      const mo = new MutationObserver(onMutations);
      mo.observe(root, { attributes: true, characterData: true, childList: true, subtree: true });
      st.observers.push(mo);
      for (const t of events) root.addEventListener(t, onEvent, { capture: true, passive: true });
      root.addEventListener('scroll', onScroll, { capture: true, passive: true });
      scan(root);
    };
    // scan watches the open shadow roots and frame documents under n.
    const scan = (n) => {
      if (!n || (n.nodeType !== 1 && n.nodeType !== 9 && n.nodeType !== 11)) return;
      const visit = (el) => {
        if (el.shadowRoot) watch(el.shadowRoot);
        if (el.localName === 'iframe' || el.localName === 'frame') {
          let d = null;
          try { d = el.contentDocument; } catch (e) {}
          if (d) watch(d);
        }
      };
      if (n.nodeType === 1) visit(n);
      const w = (n.ownerDocument || n).createTreeWalker(n, NodeFilter.SHOW_ELEMENT);
      for (let el = w.nextNode(); el; el = w.nextNode()) visit(el);
    };
    st.watch = watch;
    st.scan = scan;
    watch(document);
    const onWindow = () => { st.changes++; };
    for (const t of ['hashchange', 'popstate', 'pageshow', 'visibilitychange']) {
      globalThis.addEventListener(t, onWindow, { capture: true, passive: true });
    }
    // A web font that arrives re-lays out the text with no event on the document.
    if (document.fonts) document.fonts.addEventListener('loadingdone', onWindow);
  }
  // Deliver what the observers hold but have not reported yet.
  for (const mo of st.observers) {
    const pending = mo.takeRecords();
    if (pending.length) {
      st.changes += pending.length;
      for (const r of pending) for (const n of r.addedNodes) st.scan(n);
    }
  }
  // Frames: a document loaded in an iframe since is a change; an iframe
  // this world cannot enter (another process) is the caller's business,
  // counted so that one appearing or going is a change.
  let remote = 0, undef = 0, sheets = 0;
  const values = [];
  const roots = [document];
  for (const r of st.shadows) {
    const sr = r.deref();
    if (sr) roots.push(sr);
  }
  const seenRoots = new Set();
  while (roots.length) {
    const root = roots.pop();
    if (seenRoots.has(root)) continue;
    seenRoots.add(root);
    for (const f of root.querySelectorAll('iframe, frame')) {
      let d = null;
      try { d = f.contentDocument; } catch (e) {}
      if (!d) { remote++; continue; }
      if (!st.roots.has(d)) { st.watch(d); st.changes++; }
      roots.push(d);
      // Open shadow roots inside frame documents are in st.shadows.
    }
    undef += root.querySelectorAll(':not(:defined)').length;
    for (const c of root.querySelectorAll('input, textarea, select')) {
      if (c.localName === 'select') {
        // A multiple select's second selected option moves no selectedIndex.
        if (!c.multiple) values.push(c.selectedIndex);
        else values.push(Array.from(c.selectedOptions, (o) => o.index).join(','));
      } else if (c.type === 'checkbox' || c.type === 'radio') values.push((c.checked ? 1 : 0) + (c.indeterminate ? 2 : 0));
      else values.push(c.value.length + ':' + c.value.slice(0, 4096));
    }
    const d = root.nodeType === 9 ? root : null;
    const lists = [root.adoptedStyleSheets || []];
    if (d) lists.push(d.styleSheets);
    for (const list of lists) {
      for (const s of list) {
        sheets++;
        try { sheets += s.cssRules.length; } catch (e) { sheets += 1000000; }
      }
    }
  }
  // Offsets of the elements that ever scrolled, in the order they did.
  for (const el of st.scrollers) {
    if (!el.isConnected) { st.scrollers.delete(el); continue; }
    values.push('s' + el.scrollTop + ':' + el.scrollLeft);
  }
  // Values set by script fire no event, and a scroll's event counts no
  // change (it comes a frame late, after a capture may have seen the
  // scroll): both are compared in the page with the previous call's (a
  // password's too; nothing leaves the page).
  const vs = values.join('\u0001');
  if (st.values !== undefined && st.values !== vs) st.changes++;
  st.values = vs;
  const ae = document.activeElement;
  const sig = [st.token, st.changes, location.href, document.readyState,
    scrollX, scrollY, innerWidth, innerHeight, devicePixelRatio,
    globalThis.visualViewport ? visualViewport.scale : 1,
    remote, undef, sheets, values.length, ae ? ae.localName + '#' + (ae.id || '') : ''].join('|');
  // No frame within 500 ms (a hidden, covered or stuck tab): pending scrolls are unknown.
  return { fresh: fresh || !framed, sig, remote };
})()
