// Debian's chromium driven by playwright-core, with the flags this sandbox needs, saving a
// screenshot of every page a test visits.
import { chromium } from 'playwright-core';
import path from 'node:path';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { outputDir } from './server.mjs';

// Runs in every document: reports each page once it has rendered. On the dashboard that is the
// first render of <main> after the URL changed (a hash route is a page; its own re-renders are not,
// nor is an empty render, which a page makes when it redirects); any other document reports at load.
function reportPagesRendered() {
  let last = null;
  const rendered = () => {
    const main = document.getElementById('main');
    if (location.href === last || (main && main.children.length === 0)) return;
    last = location.href;
    window.__gpunexPageRendered(location.pathname + location.hash);
  };
  document.addEventListener('DOMContentLoaded', () => {
    const main = document.getElementById('main');
    if (main) new MutationObserver(rendered).observe(main, { childList: true });
    else window.addEventListener('load', rendered, { once: true });
  });
}

// The page's location as reportPagesRendered names it (pathname and hash).
function pageAt(page) {
  const u = new URL(page.url());
  return u.pathname + u.hash;
}

// `shot` is a screenshotter(): every page visited in this browser is saved with it as
// NN-visit-<page>.png, so no test can forget one; tests call shot() themselves for the states
// within a page they check. close() waits for the screenshots under way.
export async function launchBrowser(shot) {
  if (typeof shot !== 'function') throw new Error('launchBrowser(shot): pass a screenshotter(suite)');
  const userDataDir = mkdtempSync(path.join(tmpdir(), 'gpunex-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.GPUNEX_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
    viewport: { width: 1200, height: 800 },
  });
  const pending = new Set();
  const failures = [];
  await context.exposeBinding('__gpunexPageRendered', ({ page }, where) => {
    const name = `visit-${where.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'home'}`;
    const saving = shot(page, name).catch((e) => {
      // A page the test had already left is not a failure of that page: the screenshot raced the next
      // navigation (under load it then waits out its timeouts on a page that is going away).
      if (!page.isClosed() && pageAt(page) === where) failures.push(`${name}: ${e.message}`);
    });
    pending.add(saving);
    saving.finally(() => pending.delete(saving));
  });
  await context.addInitScript(reportPagesRendered);
  const close = context.close.bind(context);
  context.close = async () => {
    await Promise.all([...pending]);
    await close();
    if (failures.length) throw new Error(`screenshots failed: ${failures.join('; ')}`);
  };
  return context;
}

// Saves a full-page screenshot under test-output/screenshots/<suite>/NN-name.png; shot.saved
// lists the names saved so far. A capture that times out is asked for once more: Chromium now and then
// never delivers the frame of a page that has just loaded (CI on 90440af: the API reference page's
// first capture hung 30 s under load, and the test's own capture of the same page right after took a
// second), so each try gets half of the usual 30 s.
export function screenshotter(suite) {
  const dir = outputDir('screenshots', suite);
  let n = 0;
  const shot = async (page, name) => {
    n += 1;
    const file = path.join(dir, `${String(n).padStart(2, '0')}-${name}.png`);
    try {
      await page.screenshot({ path: file, fullPage: true, timeout: 15000 });
    } catch (e) {
      if (e.name !== 'TimeoutError' || page.isClosed()) throw e;
      await page.screenshot({ path: file, fullPage: true, timeout: 15000 });
    }
    shot.saved.push(name);
    return file;
  };
  shot.saved = [];
  return shot;
}
