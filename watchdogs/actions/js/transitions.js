// Resolves, with how many it awaited, once the CSS transitions and finite
// animations that started within the last `since` ms have finished, or
// after `bound` ms: a menu that fades its items in from opacity 0 is then
// observed shown, not in its first frame. Animations started earlier (a
// carousel's, a spinner's), infinite ones, and ones that would run past
// the bound are not awaited. document.getAnimations() first applies the
// pending style changes, so transitions the action set off are listed.
(since, bound) => {
  const now = document.timeline.currentTime;
  const waits = [];
  for (const a of document.getAnimations()) {
    if (a.playState !== 'running') continue;
    if (a.startTime !== null && now !== null && now - a.startTime > since) continue;
    const t = a.effect && a.effect.getComputedTiming();
    if (!t || !Number.isFinite(t.endTime)) continue;
    const left = (t.endTime - (t.localTime || 0)) / Math.abs(a.playbackRate || 1);
    if (left > bound) continue;
    waits.push(a.finished.catch(() => {}));
  }
  if (waits.length === 0) return 0;
  return Promise.race([
    Promise.all(waits),
    new Promise((resolve) => setTimeout(resolve, bound)),
  ]).then(() => waits.length);
}
