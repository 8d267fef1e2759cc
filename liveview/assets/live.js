// The live view's page: shows the frame stream, forwards the person's
// clicks, wheel, keys and text to POST ./input, and says done via POST
// ./done. Coordinates go out in CSS px of the page's viewport, scaled from
// the image by the size that ./status reports.
"use strict";
(() => {
  const screen = document.getElementById("screen");
  const stateEl = document.getElementById("state");
  const pageEl = document.getElementById("page");
  const msg = document.getElementById("msg");
  let status = { width: 0, height: 0, active: false };

  const send = async (path, body) => {
    try {
      const r = await fetch(path, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      if (!r.ok) msg.textContent = (await r.text()).trim();
      return r.ok;
    } catch (e) {
      msg.textContent = "live view unreachable";
      return false;
    }
  };
  // One request at a time, in order: a key must not overtake the click
  // that focuses its field.
  let queue = Promise.resolve(true);
  const post = (path, body) => (queue = queue.then(() => send(path, body)));

  const poll = async () => {
    try {
      const r = await fetch("status");
      status = await r.json();
      stateEl.textContent = status.active ? "Your turn: " + status.reason : "The agent has the browser (watching only)";
      stateEl.className = status.active ? "active" : "";
      pageEl.textContent = (status.title || "") + " — " + (status.url || "");
    } catch (e) {
      stateEl.textContent = "live view unreachable";
    }
  };
  poll();
  setInterval(poll, 1000);

  // point maps a mouse event on the image to viewport CSS px.
  const point = (e) => {
    const r = screen.getBoundingClientRect();
    const x = ((e.clientX - r.left) / r.width) * status.width;
    const y = ((e.clientY - r.top) / r.height) * status.height;
    return { x: Math.min(Math.max(x, 0), status.width - 1), y: Math.min(Math.max(y, 0), status.height - 1) };
  };
  const buttons = ["left", "middle", "right"];
  // No focus (and so no scroll into view) on mousedown: the image must
  // not move between the press and the click it maps.
  screen.addEventListener("mousedown", (e) => { e.preventDefault(); });
  screen.addEventListener("click", (e) => {
    post("input", { type: "click", ...point(e), button: "left", count: e.detail > 1 ? Math.min(e.detail, 3) : 1 });
  });
  screen.addEventListener("contextmenu", (e) => {
    e.preventDefault();
    post("input", { type: "click", ...point(e), button: buttons[2] });
  });
  screen.addEventListener("wheel", (e) => {
    e.preventDefault();
    post("input", { type: "scroll", ...point(e), dx: e.deltaX, dy: e.deltaY });
  }, { passive: false });
  // Keys go to the page once the person clicked it, until they click
  // elsewhere (the note box): tracked by hand, since a tab in the
  // background may not move focus to the image.
  let armed = false;
  document.addEventListener("mousedown", (e) => { armed = e.target === screen; });
  document.addEventListener("keydown", (e) => {
    if (!armed || e.target === document.getElementById("note")) return;
    e.preventDefault();
    const mods = [];
    if (e.ctrlKey) mods.push("Control");
    if (e.altKey) mods.push("Alt");
    if (e.metaKey) mods.push("Meta");
    if (e.key.length === 1 && mods.length === 0) {
      post("input", { type: "text", text: e.key });
      return;
    }
    if (["Control", "Alt", "Meta", "Shift"].includes(e.key)) return;
    if (e.shiftKey && e.key.length > 1) mods.push("Shift");
    post("input", { type: "key", key: [...mods, e.key].join("+") });
  });
  document.getElementById("done").addEventListener("click", async () => {
    if (await post("done", { note: document.getElementById("note").value })) {
      msg.textContent = "Thanks: the agent has the browser again.";
    }
  });
})();
