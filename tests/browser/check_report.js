// Opens a phaseprof HTML report from disk in headless Chromium and checks
// that it renders: no console errors or network requests, charts and the
// graph SVG have elements, tabs switch, the timeline zooms. Saves
// screenshots as test artefacts.
// usage: node check_report.js REPORT.html ARTIFACT_DIR [--tab ID] [--full]
//   --tab ID  the run tab to open (default: the first run)
//   --full    the report must contain a Graphviz graph and a flame graph
'use strict';
const path = require('path');
const fs = require('fs');
let chromium;
try {
  ({ chromium } = require('playwright-core'));
} catch (e) {
  console.error('check_report: playwright-core is not installed in tests/browser ' +
    '(run scripts/install-deps.sh --browser)');
  process.exit(1);
}

const [report, outdir, ...rest] = process.argv.slice(2);
const full = rest.includes('--full');
const tabArg = rest.indexOf('--tab') >= 0 ? rest[rest.indexOf('--tab') + 1] : null;
if (!report || !outdir) {
  console.error('usage: node check_report.js REPORT.html ARTIFACT_DIR');
  process.exit(2);
}
const exe = process.env.CHROMIUM || '/usr/bin/chromium';
if (!fs.existsSync(exe)) {
  console.error('check_report: ' + exe + ' not found (apt-get install chromium)');
  process.exit(1);
}
fs.mkdirSync(outdir, { recursive: true });

const failures = [];
function check(cond, what) {
  if (cond) console.log('ok: ' + what);
  else { console.log('FAIL: ' + what); failures.push(what); }
}

(async () => {
  const browser = await chromium.launch({
    executablePath: exe,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    const errors = [];
    page.on('console', (m) => { if (m.type() === 'error') errors.push('console: ' + m.text()); });
    page.on('pageerror', (e) => errors.push('page error: ' + e.message));
    page.on('request', (r) => {
      const u = r.url();
      if (!u.startsWith('file:') && !u.startsWith('data:')) errors.push('network request: ' + u);
    });
    await page.goto('file://' + path.resolve(report), { waitUntil: 'load' });

    check(await page.isVisible('#overview'), 'overview panel visible first');
    check((await page.textContent('#overview h2')).includes('What is slow'), 'findings come first');
    const bars = await page.$$eval('#overview svg.bars rect', (e) => e.length);
    check(bars >= 1, 'scenario variants chart has bars (' + bars + ')');
    await page.screenshot({ path: path.join(outdir, 'overview.png'), fullPage: true });

    // click the first run's tab
    const tab = await page.$(tabArg ? 'nav button.tab[data-tab="' + tabArg + '"]' : 'nav button.tab[data-tab^="run-"]');
    check(!!tab, 'a run tab exists');
    const id = await tab.getAttribute('data-tab');
    await tab.click();
    const panel = '#' + id;
    check(await page.isVisible(panel), 'clicking the tab shows ' + id);
    check(!(await page.isVisible('#overview')), 'and hides the overview');

    const count = (sel) => page.$$eval(panel + ' ' + sel, (e) => e.length);
    const wf = await count('svg.waterfall rect');
    check(wf > 3, 'phase waterfall has bars (' + wf + ')');
    const st = await count('svg.steps rect, svg.steps path, svg.steps polyline');
    check(st > 3, 'step chart has marks (' + st + ')');
    const tl = await count('.timeline svg rect');
    check(tl > 10, 'timeline drew shapes (' + tl + ')');
    // graphs and flame graphs live in whichever runs have snapshots / samples
    const all = (sel) => page.$$eval(sel, (e) => e.length);
    if (full || (await all('.graphbox'))) {
      const nodes = await all('.graphbox svg g.node');
      check(nodes > 0, 'Graphviz graph SVG has nodes (' + nodes + ')');
      const edges = await all('.graphbox svg g.edge');
      check(edges > 0, 'Graphviz graph SVG has edges (' + edges + ')');
    }
    if (full || (await all('svg.flame'))) {
      const flame = await all('svg.flame rect');
      check(flame > 2, 'flame graph has frames (' + flame + ')');
    }
    const ctr = await count('svg.counter path');
    check(ctr > 0, 'counter charts drawn (' + ctr + ')');

    if (full) {
      const marks = await count('.timeline svg path[data-mk]');
      check(marks > 0, 'timeline shows marks (' + marks + ')');
    }
    // zoom the timeline with its + button and check the range changed
    const range = panel + ' .timeline .range';
    const before = await page.textContent(range);
    await page.click(panel + ' .timeline button[data-z="in"]');
    await page.click(panel + ' .timeline button[data-z="in"]');
    const after = await page.textContent(range);
    check(before !== after, 'timeline zooms (' + before + ' → ' + after + ')');
    // wheel zoom + hover tooltip
    const box = await page.$eval(panel + ' .timeline svg', (s) => { const r = s.getBoundingClientRect(); return { x: r.x, y: r.y, w: r.width }; });
    await page.mouse.move(box.x + box.w * 0.5, box.y + 40);
    await page.mouse.wheel(0, 300);
    await page.click(panel + ' .timeline button[data-z="reset"]');
    const rect = await page.$(panel + ' .timeline svg rect[data-i]');
    if (rect) {
      await rect.hover({ force: true });
      const tipShown = await page.$eval('.tip', (t) => t.style.display === 'block' && t.textContent.length > 0);
      check(tipShown, 'timeline tooltip on hover');
    }
    await page.mouse.move(0, 0);
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: path.join(outdir, 'run.png'), fullPage: true });
    await page.screenshot({ path: path.join(outdir, 'run-top.png') });
    check(errors.length === 0, 'no console errors or network requests' + (errors.length ? ': ' + errors.join('; ') : ''));
  } finally {
    await browser.close();
  }
  if (failures.length) {
    console.log('check_report: ' + failures.length + ' check(s) failed');
    process.exit(1);
  }
  console.log('check_report: all checks passed; screenshots in ' + outdir);
})().catch((e) => { console.error('check_report: ' + e.message); process.exit(1); });
