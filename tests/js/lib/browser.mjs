// Debian's chromium driven by playwright-core, with the flags this sandbox needs.
import { chromium } from 'playwright-core';
import path from 'node:path';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { outputDir } from './server.mjs';

export async function launchBrowser() {
  const userDataDir = mkdtempSync(path.join(tmpdir(), 'gpunex-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.GPUNEX_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
    viewport: { width: 1200, height: 800 },
  });
  return context;
}

// Saves a full-page screenshot under test-output/<suite>/NN-name.png.
export function screenshotter(suite) {
  const dir = outputDir('screenshots', suite);
  let n = 0;
  return async (page, name) => {
    n += 1;
    const file = path.join(dir, `${String(n).padStart(2, '0')}-${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    return file;
  };
}
