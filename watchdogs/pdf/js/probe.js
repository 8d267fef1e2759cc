// What the tab shows: its URL, its document's type, and when the document
// began (a reload or a new navigation to the same URL is a new document).
({url: location.href, type: document.contentType, origin: performance.timeOrigin})
