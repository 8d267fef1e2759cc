// The live view's page: shows the frame stream, forwards the person's
// clicks, wheel, keys and text to POST ./input, and says done via POST
// ./done. Coordinates go out in CSS px of the page, scaled from the image
// by the frame size (else the viewport size) that ./status reports. The
// frame stream is open only during a hand-off.
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

  const askEl = document.getElementById("ask");
  const whoEl = document.getElementById("who");
  const reasonEl = document.getElementById("reason");
  const tabsEl = document.getElementById("tabs");
  // The frame stream is open only during a hand-off: outside one nobody
  // needs the picture, and the screencast costs the agent's browser.
  let streaming = false;
  const stream = (on) => {
    if (on === streaming) return;
    streaming = on;
    if (on) screen.src = "frames?" + Date.now();
    else screen.removeAttribute("src");
  };
  const tabStrip = () => {
    tabsEl.replaceChildren(...(status.tabs || []).map((t) => {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = t.title || t.url || t.id;
      b.title = t.url || "";
      if (t.focused) b.className = "focused";
      b.disabled = !status.active || t.focused;
      b.addEventListener("click", () => post("tab", { id: t.id }));
      return b;
    }));
  };
  let timer = 0;
  const poll = async () => {
    try {
      const r = await fetch("status");
      status = await r.json();
      // textContent only: the reason is untrusted (the model's words).
      stateEl.textContent = status.active ? "Your turn" : "The agent has the browser (watching paused)";
      stateEl.className = status.active ? "active" : "";
      pageEl.textContent = (status.title || "") + " — " + (status.url || "");
      askEl.hidden = !status.active;
      if (status.active) {
        whoEl.textContent = "Asked by " + status.asker + (status.origin ? " for " + status.origin : "") + ":";
        reasonEl.textContent = "“" + (status.reason || "") + "”";
      }
      tabStrip();
      stream(status.active);
    } catch (e) {
      stateEl.textContent = "live view unreachable";
    }
    clearTimeout(timer);
    timer = setTimeout(poll, status.active ? 1000 : 5000);
  };
  poll();

  // point maps a mouse event on the image to CSS px of the page: the
  // image's content box (inside its border) shows the frame's page area.
  const point = (e) => {
    const r = screen.getBoundingClientRect();
    const w = status.frame_width || status.width;
    const h = status.frame_height || status.height;
    const x = ((e.clientX - r.left - screen.clientLeft) / screen.clientWidth) * w;
    const y = ((e.clientY - r.top - screen.clientTop) / screen.clientHeight) * h;
    return { x: Math.min(Math.max(x, 0), w - 1), y: Math.min(Math.max(y, 0), h - 1) };
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
      poll();
    }
  });
})();
