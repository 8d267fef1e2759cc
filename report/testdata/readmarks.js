// Reads the report's marks, after pictures and timelines as the page
// renders them. Called with the width to give the screenshots (0: as the
// report lays them out).
async (width) => {
  if (width > 0) {
    for (const b of document.querySelectorAll('.shotbox')) b.style.width = width + 'px';
  }
  const imgs = [...document.querySelectorAll('img')];
  await Promise.all(imgs.map(i => i.complete ? 0 : new Promise(r => { i.onload = i.onerror = r; })));
  // The colour of an image's pixel at a point given in fractions of its size.
  const pixel = (img, fx, fy) => {
    const c = document.createElement('canvas');
    c.width = img.naturalWidth; c.height = img.naturalHeight;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    const d = g.getImageData(Math.floor(fx * c.width), Math.floor(fy * c.height), 1, 1).data;
    return [d[0], d[1], d[2]];
  };
  const marks = [...document.querySelectorAll('.mark')].map(m => {
    const box = m.closest('.shotbox');
    const img = box.querySelector('img.shot');
    const ir = img.getBoundingClientRect(), mr = m.getBoundingClientRect();
    const kind = m.dataset.kind;
    // A point's dot is centred on the point.
    const left = kind === 'point' ? mr.left + mr.width / 2 : mr.left;
    const top = kind === 'point' ? mr.top + mr.height / 2 : mr.top;
    return {
      Step: +m.dataset.step, Action: +m.dataset.action, Kind: kind,
      X: +m.dataset.x, Y: +m.dataset.y, W: +m.dataset.w, H: +m.dataset.h,
      Left: left - ir.left, Top: top - ir.top, Width: mr.width, Height: mr.height,
      ImgWidth: ir.width, ImgHeight: ir.height, Natural: [img.naturalWidth, img.naturalHeight],
      Section: +m.closest('section.step').dataset.step,
    };
  });
  const afters = [...document.querySelectorAll('img.after-shot')].map(i => ({
    Step: +i.closest('section.step').dataset.step,
    Caption: i.closest('figure').querySelector('figcaption').textContent,
    Loaded: i.naturalWidth > 0,
    Image: i,
  }));
  const phases = [...document.querySelectorAll('.timeline .phase')].map(p => ({
    Step: +p.closest('.timeline').dataset.step, Name: p.dataset.phase, MS: +p.dataset.ms, Text: p.textContent,
  }));
  return {
    Marks: marks, Phases: phases,
    Afters: afters.map(a => ({ Step: a.Step, Caption: a.Caption, Loaded: a.Loaded })),
    // The colour inside each box mark near its top left corner (clear of
    // a button's label), in its step's before picture and, when shown,
    // its after picture.
    Colours: [...document.querySelectorAll('.mark-box')].map(m => {
      const x = (+m.dataset.x + +m.dataset.w * 0.1), y = (+m.dataset.y + +m.dataset.h * 0.2);
      const sec = m.closest('section.step');
      const vw = +sec.dataset.vw, vh = +sec.dataset.vh;
      const after = sec.querySelector('img.after-shot');
      return {
        Step: +m.dataset.step, Action: +m.dataset.action,
        Before: pixel(sec.querySelector('img.shot'), x / vw, y / vh),
        After: after ? pixel(after, x / vw, y / vh) : null,
      };
    }),
  };
}
