// Opens a report written from a hostile database (tests/viewers/hostile_fill.py
// filled every text column) in headless Chromium and checks that nothing in
// it became code or markup: no dialog opens, no script of the file's runs,
// no element it names exists (img[src=x], b#pwned, an extra <script>,
// <style> or <svg onload>), no attribute handler was added. Every tab is
// opened and hovered over, so what the report's script draws from the data
// (timeline, flame graph, tooltips) is checked too.
// usage: node check_hostile.js REPORT.html ARTIFACT_DIR
'use strict';
const path = require('path');
const fs = require('fs');
const { chromium } = require('playwright-core');

const [report, outdir] = process.argv.slice(2);
const exe = process.env.CHROMIUM || '/usr/bin/chromium';
fs.mkdirSync(outdir, { recursive: true });
const failures = [];
function check(cond, what) {
  if (cond) console.log('ok: ' + what);
  else { console.log('FAIL: ' + what); failures.push(what); }
}

(async () => {
  const browser = await chromium.launch({
    executablePath: exe, headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    const dialogs = [], errors = [];
    page.on('dialog', async (d) => { dialogs.push(d.message()); await d.dismiss(); });
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('request', (r) => {
      const u = r.url();
      if (!u.startsWith('file://' + path.resolve(report)) && !u.startsWith('data:')) errors.push('request: ' + u);
    });
    await page.goto('file://' + path.resolve(report), { waitUntil: 'load' });
    const tabs = await page.$$eval('nav button.tab', (b) => b.map((x) => x.getAttribute('data-tab')));
    check(tabs.length >= 2, 'report has tabs (' + tabs.length + ')');
    for (const t of tabs) {
      await page.click('nav button.tab[data-tab="' + t + '"]');
      // hover over what the script draws (tooltips are built from names)
      const shapes = await page.$$('#' + t + ' svg rect');
      for (const s of shapes.slice(0, 40)) { try { await s.hover({ timeout: 200 }); } catch (e) { /* hidden */ } }
      for (const d of await page.$$('#' + t + ' details summary')) { try { await d.click({ timeout: 200 }); } catch (e) { } }
    }
    await page.waitForTimeout(300);
    await page.screenshot({ path: path.join(outdir, 'hostile.png'), fullPage: true });
    const dom = await page.evaluate(() => {
      const own = (s) => s.type === 'application/json' || !s.textContent.includes('alert(');
      const handlers = [];
      for (const e of document.querySelectorAll('*'))
        for (const a of e.attributes)
          if (/^on/i.test(a.name) && /alert/.test(a.value)) handlers.push(e.tagName + '[' + a.name + ']');
      return {
        img: document.querySelectorAll('img[src="x"], img').length,
        pwned: document.querySelectorAll('#pwned').length,
        scripts: [...document.querySelectorAll('script')].filter((s) => !own(s)).length,
        styles: [...document.querySelectorAll('style')].filter((s) => s.textContent.includes('body{display:none}')).length,
        svgOnload: document.querySelectorAll('svg[onload]').length,
        handlers,
        hidden: getComputedStyle(document.body).display === 'none',
        flag: window.__pwned === 1,
        text: document.body.innerText.includes('<img src=x onerror=alert(1)>'),
      };
    });
    check(dialogs.length === 0, 'no dialog opened (' + dialogs.join(' | ') + ')');
    check(dom.img === 0, 'no <img> injected (' + dom.img + ')');
    check(dom.pwned === 0, 'no element #pwned injected');
    check(dom.scripts === 0, 'no <script> injected (' + dom.scripts + ')');
    check(dom.styles === 0, 'no <style> injected');
    check(dom.svgOnload === 0, 'no <svg onload> injected');
    check(dom.handlers.length === 0, 'no event handler attributes from the data (' + dom.handlers.slice(0, 5).join(' ') + ')');
    check(!dom.hidden, 'page not hidden');
    check(dom.text, 'the hostile names are shown as text');
    check(errors.length === 0, 'no page errors or requests (' + errors.slice(0, 3).join(' | ') + ')');
  } finally {
    await browser.close();
  }
  if (failures.length) { console.log(failures.length + ' check(s) failed'); process.exit(1); }
  console.log('all checks passed');
})().catch((e) => { console.error(e); process.exit(1); });
