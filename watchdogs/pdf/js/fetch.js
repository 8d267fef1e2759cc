// Fetches the tab's own document again, through the tab (its cookies, its
// network stack, the URL policy's request interception), and returns its
// bytes as base64 with its status and type. MAX_BYTES caps the size.
(async (max) => {
  const url = location.href;
  let r;
  try {
    r = await fetch(url, {credentials: 'include'});
  } catch (e) {
    return {url, error: String(e && e.message || e)};
  }
  const type = r.headers.get('content-type') || '';
  const len = Number(r.headers.get('content-length') || 0);
  if (!r.ok) return {url, status: r.status, type};
  if (len > max) return {url, status: r.status, type, size: len, tooBig: true};
  const b = new Uint8Array(await r.arrayBuffer());
  if (b.length > max) return {url, status: r.status, type, size: b.length, tooBig: true};
  let s = '';
  for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode.apply(null, b.subarray(i, i + 0x8000));
  return {url, status: r.status, type, size: b.length, data: btoa(s)};
})
