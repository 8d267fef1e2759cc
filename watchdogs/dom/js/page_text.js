// The page's visible text (innerText of the body), with its URL and title,
// named as events.PageTextResult's fields.
(() => ({
  URL: location.href,
  Title: document.title,
  Text: document.body ? document.body.innerText : '',
}))()
