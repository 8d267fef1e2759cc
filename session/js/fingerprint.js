// Reads the page fingerprint in one evaluation. The mutation counter
// (mutations.js) is prepended by the session, so a document that predates
// the session gets it installed first.
(() => ({
  url: location.href,
  mutations: window.__browseragentMutations,
  elements: document.getElementsByTagName('*').length,
  title: document.title,
}))()
