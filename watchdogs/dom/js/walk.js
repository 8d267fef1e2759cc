// The viewport-scoped walker. Called (in an isolated world) as
// fn(root, opts) where root is a Document or a ShadowRoot and opts is
// {margin, styles, ox, oy, vw, vh, shadow, hidden}: ox/oy place root's
// document in the top-level viewport, vw/vh is that viewport, shadow says
// root sits inside a shadow tree, hidden that its host has no box.
// It returns [json, refs]: json is a flat list of node records in
// document order (shadow roots, light children, content document), each
// naming its parent record; refs holds the DOM node of every record, so
// the caller can resolve the ones it indexes. Only nodes within margin of
// the viewport (plus their ancestors, boxless nodes under such nodes,
// iframes and file inputs anywhere) are listed; the rest is counted.
// A listed element's rendered ::before/::after that draws an image
// (content or background-image with url()) is reported on its record
// (ps: [{t, S}]), as the full capture gives it a row of its own.
(root, opts) => {
  const recs = [];
  const refs = [];
  const styleNames = opts.styles;
  const m = opts.margin;
  const total = { above: 0, below: 0 };
  // What is not listed, counted for the page's statistics.
  const un = { elements: 0, links: 0, inputs: 0, images: 0 };
  const unlisted = (el, tag) => {
    un.elements++;
    if (tag === 'a') { if (el.hasAttribute('href')) un.links++; }
    else if (tag === 'input' || tag === 'textarea' || tag === 'select') un.inputs++;
    else if (tag === 'img') un.images++;
  };
  const keep = (r, ox, oy) => {
    const top = r.top + oy, left = r.left + ox;
    if (top + r.height < -m) { total.above++; return false; }
    if (top > opts.vh + m) { total.below++; return false; }
    return left < opts.vw + m && left + r.width > -m;
  };
  // Paint order, as the snapshot reports it: the rank of the node's paint
  // layer (nodes without a layer of their own share their enclosing
  // layer's). A layer's key is its enclosing layer's key then [list, z,
  // flex order, tree order], the lists in painting order: negative z,
  // normal flow (overflow clips), z auto or 0, positive z. Each record
  // carries its key (k); the caller ranks the keys of all its walks
  // together (equal keys, equal ranks). Flex and grid items paint in
  // order-modified document order: an item's order holds for its layer.
  // A graft's walk starts from its host's key (opts.key) and tree order
  // (opts.ord): its nodes come right after the host.
  let order = 0;
  const next = opts.ord === undefined ? () => order++ : () => opts.ord + (++order) / 1e7;
  // Elements that may hold a closed shadow root (the page's script cannot
  // see one): custom elements, and elements of the tags that can that are
  // empty or whose children draw nothing.
  const hostTags = new Set(['article', 'aside', 'blockquote', 'body', 'div', 'footer', 'h1', 'h2', 'h3', 'h4',
    'h5', 'h6', 'header', 'main', 'nav', 'p', 'section', 'span']);
  const rectOf = (r, sx, sy) => [r.left + sx, r.top + sy, r.width, r.height];
  // unrendered: the first few children of a box draw nothing (light
  // children a shadow root does not slot look so; so do hidden ones).
  const unrendered = (el) => {
    let seen = 0;
    for (let c = el.firstChild; c && seen < 5; c = c.nextSibling) {
      if (c.nodeType === 1) {
        if (c.getClientRects().length) return false;
        seen++;
      } else if (c.nodeType === 3 && /\S/.test(c.data)) {
        const range = c.ownerDocument.createRange();
        range.selectNodeContents(c);
        if (range.getClientRects().length) return false;
        seen++;
      }
    }
    return seen > 0;
  };
  const noRect = { left: 0, top: 0, width: 0, height: 0 };
  // stacked: a computed style that gives its element a stacking paint
  // layer (positioned, or a stacking context by another property).
  const stacked = (cs) => cs.position !== 'static' || cs.opacity !== '1' || cs.transform !== 'none' ||
    cs.filter !== 'none' || cs.isolation === 'isolate' || cs.mixBlendMode !== 'normal' || cs.clipPath !== 'none' ||
    cs.backdropFilter !== 'none' || cs.perspective !== 'none' || (cs.maskImage && cs.maskImage !== 'none') ||
    /transform|opacity|filter|perspective/.test(cs.willChange) || /paint|layout|strict|content/.test(cs.contain);
  // pseudo reports el's rendered ::before/::after that draw an image.
  const pseudo = (el, rec) => {
    for (const pt of ['before', 'after']) {
      const ps = getComputedStyle(el, '::' + pt);
      const c = ps.content;
      if (c === 'none' || c === 'normal' || ps.display === 'none') continue;
      if (!c.includes('url(') && !ps.backgroundImage.includes('url(')) continue;
      (rec.ps || (rec.ps = [])).push({ t: pt, S: styleNames.map((s) => ps.getPropertyValue(s)) });
    }
  };

  // visit lists node n (child of record p) and what it keeps below;
  // returns true when something was listed. ctx carries the document's
  // scroll and offset, whether the parent is in range, and the paint key.
  function visit(n, p, ctx, rel) {
    const t = n.nodeType;
    if (t === 3) {
      if (!ctx.inRange || !/\S/.test(n.data)) return false;
      const rec = { p, t: 3, v: n.data, k: ctx.key };
      if (!ctx.locked) {
        const range = n.ownerDocument.createRange();
        range.selectNodeContents(n);
        const rs = range.getClientRects();
        if (rs.length) {
          const r = range.getBoundingClientRect();
          rec.L = rectOf(r, ctx.sx, ctx.sy);
          rec.S = ctx.styles;
        }
      }
      recs.push(rec); refs.push(null);
      return true;
    }
    if (t !== 1) return false;
    const el = n;
    const myOrder = next();
    let cs = null;
    const style = () => cs || (cs = getComputedStyle(el));
    // Under content-visibility:hidden (a closed <details>' content,
    // hidden=until-found) the rects are still reported, but nothing is
    // rendered and the full capture has no layout for it.
    const r = ctx.locked ? noRect : el.getBoundingClientRect();
    const hasBox = !ctx.locked && ((r.width > 0 || r.height > 0 || r.top !== 0 || r.left !== 0) || el.getClientRects().length > 0);
    const inRange = hasBox ? keep(r, ctx.ox, ctx.oy) : ctx.inRange;
    const tag = el.localName;
    const isFrame = tag === 'iframe' || tag === 'frame';
    // Listed wherever they are: frames, file inputs, and empty custom
    // elements without an open shadow root (a closed one may draw a fixed
    // banner far from where its host sits).
    const always = isFrame || (tag === 'input' && (el.getAttribute('type') || '').toLowerCase() === 'file') ||
      (tag.includes('-') && !el.firstChild && !el.shadowRoot);
    // The common case on a long page: a leaf out of range costs nothing more.
    if (!inRange && !always && !el.firstElementChild && !el.shadowRoot) { unlisted(el, tag); return false; }
    const idx = recs.length;
    const rec = { p, t: 1, nn: el.nodeName, ln: tag };
    if (rel) rec.rel = rel;
    let key = ctx.key;
    let fo = ctx.fo;
    if (inRange || always) {
      style();
      if (ctx.flex && cs.order !== '0') fo = parseInt(cs.order, 10) || 0;
      // z-index applies to positioned elements and flex/grid items.
      const z = cs.position !== 'static' || ctx.flex ? cs.zIndex : 'auto';
      if (z !== 'auto' || stacked(cs)) {
        const zi = z === 'auto' ? 0 : parseInt(z, 10) || 0;
        key = key.concat([zi < 0 ? 0 : zi > 0 ? 3 : 2, zi, fo, myOrder]);
      } else if ((cs.overflowX !== 'visible' || cs.overflowY !== 'visible') && tag !== 'html' && tag !== 'body') {
        key = key.concat([1, 0, fo, myOrder]);
      }
      rec.k = key;
    }
    recs.push(rec); refs.push(el);
    const styles = inRange || always ? styleNames.map((s) => cs.getPropertyValue(s)) : null;
    const fill = () => {
      const st = style();
      if (!rec.k) rec.k = key;
      const attrs = [];
      for (const a of el.attributes) attrs.push(a.name, a.value);
      rec.a = attrs;
      rec.S = styles || styleNames.map((s) => st.getPropertyValue(s));
      if (hasBox) {
        rec.L = rectOf(r, ctx.sx, ctx.sy);
        rec.C = [el.clientLeft, el.clientTop, el.clientWidth, el.clientHeight];
        rec.R = [el.scrollLeft, el.scrollTop, el.scrollWidth, el.scrollHeight];
        const can = (v) => v === 'auto' || v === 'scroll' || v === 'overlay';
        if (el !== el.ownerDocument.documentElement &&
            ((can(st.overflowY) && el.scrollHeight > el.clientHeight) || (can(st.overflowX) && el.scrollWidth > el.clientWidth))) rec.sc = 1;
        if (inRange) pseudo(el, rec);
      }
    };
    if (tag === 'input') {
      rec.iv = el.value;
      if (el.checked) rec.ck = 1;
    } else if (tag === 'textarea') {
      rec.tv = el.value;
    } else if (tag === 'option' && el.selected) {
      rec.os = 1;
    }
    const locked = ctx.locked || (cs !== null && cs.contentVisibility === 'hidden');
    const sub = { ox: ctx.ox, oy: ctx.oy, sx: ctx.sx, sy: ctx.sy, inRange, hasBox, styles, key, shadow: ctx.shadow, locked,
      fo: key === ctx.key ? fo : 0, flex: cs !== null && /flex|grid/.test(cs.display) };
    if (!styles) sub.styles = null;
    let any = false;
    const sr = el.shadowRoot;
    if (sr) {
      const si = recs.length;
      recs.push({ p: idx, t: 11, nn: '#document-fragment', sr: sr.mode, k: key }); refs.push(sr);
      let got = false;
      for (let c = sr.firstChild; c; c = c.nextSibling) got = visit(c, si, Object.assign({}, sub, { shadow: true }), '') || got;
      if (!got && !inRange) { recs.length = si; refs.length = si; } else any = true;
    } else if ((inRange || always) && (tag.includes('-') || (hostTags.has(tag) && (!el.firstChild || (hasBox && unrendered(el)))))) {
      rec.ch = 1; // maybe a closed shadow host: the caller looks
      rec.to = myOrder;
      rec.o = [ctx.ox, ctx.oy];
    }
    if (tag === 'details' && !el.open && !locked) {
      // Closed: only the first <summary> child is rendered.
      const shut = Object.assign({}, sub, { locked: true });
      let summary = null;
      for (let c = el.firstElementChild; c && !summary; c = c.nextElementSibling) if (c.localName === 'summary') summary = c;
      for (let c = el.firstChild; c; c = c.nextSibling) any = visit(c, idx, c === summary ? sub : shut, '') || any;
    } else {
      for (let c = el.firstChild; c; c = c.nextSibling) any = visit(c, idx, sub, '') || any;
    }
    if (isFrame) {
      rec.fr = 1;
      rec.to = myOrder;
      let doc = null;
      try { doc = el.contentDocument; } catch (e) { doc = null; }
      if (doc && doc.documentElement && r) {
        const w = doc.defaultView;
        const off = { ox: ctx.ox + r.left + el.clientLeft, oy: ctx.oy + r.top + el.clientTop };
        walkDoc(doc, idx, off.ox, off.oy, w ? w.scrollX : 0, w ? w.scrollY : 0, ctx.key);
        any = true;
      } else if (!doc) {
        rec.xo = 1; // content not reachable here: the caller resolves it
        if (r) rec.o = [ctx.ox + r.left + el.clientLeft, ctx.oy + r.top + el.clientTop];
      }
    }
    if (any || inRange || always) { fill(); return true; }
    recs.length = idx; refs.length = idx;
    unlisted(el, tag);
    return false;
  }

  function walkDoc(doc, p, ox, oy, sx, sy, key) {
    const se = doc.scrollingElement || doc.documentElement;
    const di = recs.length;
    const rec = { p, t: 9, nn: '#document', du: doc.URL, rel: 'doc', k: key,
      D: [se ? se.scrollWidth : 0, se ? se.scrollHeight : 0, sx, sy] };
    recs.push(rec); refs.push(doc);
    const ctx = { ox, oy, sx, sy, inRange: true, hasBox: false, styles: null, key: key.concat([1, 0, 0, next()]), shadow: false, locked: false, fo: 0, flex: false };
    for (let c = doc.firstChild; c; c = c.nextSibling) visit(c, di, ctx, '');
  }

  if (root.nodeType === 9) {
    const w = root.defaultView;
    walkDoc(root, -1, opts.ox, opts.oy, w ? w.scrollX : 0, w ? w.scrollY : 0, opts.key || []);
  } else {
    // A shadow root the caller found (closed): list it and its subtree.
    const w = root.ownerDocument.defaultView;
    const sx = w ? w.scrollX : 0, sy = w ? w.scrollY : 0;
    const hk = opts.key || [];
    recs.push({ p: -1, t: 11, nn: '#document-fragment', sr: root.mode, k: hk }); refs.push(root);
    const ctx = { ox: opts.ox, oy: opts.oy, sx, sy, inRange: !opts.hidden, hasBox: false, styles: null, key: hk, shadow: true, locked: false, fo: 0, flex: false };
    const hs = root.host ? getComputedStyle(root.host) : null;
    ctx.hasBox = !!(root.host && root.host.getClientRects().length);
    ctx.styles = hs ? styleNames.map((s) => hs.getPropertyValue(s)) : null;
    for (let c = root.firstChild; c; c = c.nextSibling) visit(c, 0, ctx, '');
  }
  return [JSON.stringify({ n: recs, above: total.above, below: total.below, un }), refs];
}
