// Resolves once the page has painted a frame and then run one more task:
// by then the tasks an input event's handlers queued (a form submission,
// a zero-delay timer, a promise's callbacks) have run.
new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)))
