// The Playwright side of benchperception: connects to the benchmark's
// Chromium over CDP, opens a tab of its own and answers one JSON command
// per stdin line with one JSON line on stdout.
//   {"op":"goto","url":U}  -> {"ok":true}
//   {"op":"snap"}          -> {"ms":T,"chars":N}  (locator('body').ariaSnapshot({mode:'ai'}))
// stdin's end closes the tab and disconnects (the browser keeps running).
'use strict';
const path = require('path');
const readline = require('readline');
const { chromium } = require(path.join(__dirname, 'node_modules', 'playwright-core'));
const version = require(path.join(__dirname, 'node_modules', 'playwright-core', 'package.json')).version;

function out(v) { process.stdout.write(JSON.stringify(v) + '\n'); }

(async () => {
  const browser = await chromium.connectOverCDP(process.argv[2], { timeout: 120000 });
  const context = browser.contexts()[0] || await browser.newContext();
  const page = await context.newPage();
  out({ ready: true, version });
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    let cmd;
    try { cmd = JSON.parse(line); } catch (e) { out({ error: 'bad command: ' + e.message }); continue; }
    try {
      if (cmd.op === 'goto') {
        await page.goto(cmd.url, { waitUntil: 'load', timeout: 300000 });
        out({ ok: true });
      } else if (cmd.op === 'snap') {
        const t0 = performance.now();
        const s = await page.locator('body').ariaSnapshot({ mode: 'ai', timeout: 300000 });
        out({ ms: performance.now() - t0, chars: s.length });
      } else {
        out({ error: 'unknown op ' + cmd.op });
      }
    } catch (e) {
      out({ error: String(e && e.message || e) });
    }
  }
  await page.close().catch(() => {});
  await browser.close().catch(() => {});
})().catch((e) => { out({ error: String(e && e.message || e) }); process.exit(1); });
