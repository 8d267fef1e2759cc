// Fetches the tab's own document again, through the tab (its cookies, its
// network stack, the URL policy's request interception), and returns its
// bytes as base64 with its status and type. The body is read as a stream
// and dropped once it passes MAX bytes, so a huge document is never held
// whole. A redirect is not followed: the tab's URL is already where its
// navigation (judged by the policy) ended, and a hop the policy might not
// judge (a subresource in the navigations scope) must not be fetched.
(async (max) => {
  const url = location.href;
  let r;
  try {
    r = await fetch(url, {credentials: 'include', redirect: 'manual'});
  } catch (e) {
    return {url, error: String(e && e.message || e)};
  }
  if (r.type === 'opaqueredirect') return {url, redirected: true};
  const type = r.headers.get('content-type') || '';
  const len = Number(r.headers.get('content-length') || 0);
  if (!r.ok) return {url, status: r.status, type};
  if (len > max) {
    r.body && r.body.cancel().catch(() => {});
    return {url, status: r.status, type, size: len, tooBig: true};
  }
  const parts = [];
  let size = 0;
  const reader = r.body.getReader();
  for (;;) {
    const {done, value} = await reader.read();
    if (done) break;
    size += value.length;
    if (size > max) {
      reader.cancel().catch(() => {});
      return {url, status: r.status, type, size, tooBig: true};
    }
    parts.push(value);
  }
  let s = '';
  for (const b of parts) {
    for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode.apply(null, b.subarray(i, i + 0x8000));
  }
  return {url, status: r.status, type, size, data: btoa(s)};
})
