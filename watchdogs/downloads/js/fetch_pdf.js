// Fetches url from inside the page (same origin, the page's cookies and
// credentials) and returns {data: base64 of the body}, {status} for an
// HTTP error, or {tooLarge: true} as soon as the body exceeds maxBytes
// (checked while reading, so an oversized body is never buffered whole).
async function (url, maxBytes) {
  const r = await fetch(url, { credentials: 'include' });
  if (!r.ok) return { status: r.status };
  if (Number(r.headers.get('content-length')) > maxBytes) return { tooLarge: true };
  const reader = r.body.getReader();
  const chunks = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > maxBytes) {
      await reader.cancel();
      return { tooLarge: true };
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) {
    bytes.set(c, off);
    off += c.length;
  }
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return { data: btoa(s) };
}
