// Browser: the API reference page (issue 20). The dashboard links to /api-docs.html, where Swagger UI
// (web/package.json's swagger-ui-dist, embedded in the server) renders this server's /v1/openapi.json:
// every documented operation appears with its path and summary, an operation opens to show its
// answer's schema, all of it under the server's Content-Security-Policy (no violation, no page
// error) and without a request to anywhere but this server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, Client, TestServer } from '../lib/server.mjs';
import { launchBrowser, screenshotter } from '../lib/browser.mjs';

test(`${BACKEND}: the API reference page renders every operation of /v1/openapi.json`, async () => {
  const server = await new TestServer().start();
  const shot = screenshotter(`api-docs-${BACKEND}`);
  const browser = await launchBrowser(shot);
  const problems = [];
  try {
    const doc = (await new Client(server.url).request('GET', '/v1/openapi.json')).json;
    const expected = [];
    for (const [p, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) expected.push(`${method.toUpperCase()} ${p} ${op.summary}`);
    }

    // The page as the server serves it: the dashboard's CSP, the renderer from this server.
    const page1 = await new Client(server.url).request('GET', '/api-docs.html');
    assert.equal(page1.status, 200);
    assert.match(page1.headers.get('content-security-policy'), /script-src 'self';/);
    assert.doesNotMatch(page1.headers.get('content-security-policy'), /unsafe-(eval|inline)/);
    const bundle = await new Client(server.url).request('GET', '/swagger-ui-bundle.js');
    assert.equal(bundle.status, 200);
    assert.match(bundle.headers.get('content-type'), /^text\/javascript/);

    const page = await browser.newPage();
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      // The dashboard asks /v1/me before anyone has signed in: that 401 is expected.
      if (/status of 401/.test(m.text())) return;
      if (m.type() === 'error' || /Content Security Policy|Refused to/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    page.on('request', (r) => {
      const u = r.url();
      if (!u.startsWith(server.url) && !u.startsWith('data:') && !u.startsWith('blob:')) problems.push(`request to ${u}`);
    });

    // From the dashboard's navigation.
    await page.goto(`${server.url}/#/`);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'API', exact: true }).click();
    await page.waitForURL(`${server.url}/api-docs.html`);
    await page.locator('.opblock').first().waitFor({ timeout: 30000 });
    await shot(page, 'reference');

    // Every operation, by method, path and summary, as the page shows them.
    const shown = await page.locator('.opblock').evaluateAll((blocks) => blocks.map((b) => [
      b.querySelector('.opblock-summary-method')?.textContent.trim(),
      b.querySelector('.opblock-summary-path')?.getAttribute('data-path'),
      b.querySelector('.opblock-summary-description')?.textContent.trim(),
    ].join(' ')));
    assert.deepEqual([...shown].sort(), [...expected].sort());
    assert.ok(shown.includes('GET /v1/marketplace/offers Offers visible now'), 'the offers search is listed');

    // The offers search opens to its answer: 200, with an example body made from the response schema
    // (the Offer component's members).
    const offers = page.locator('.opblock-get', { has: page.locator('.opblock-summary-path[data-path="/v1/marketplace/offers"]') });
    await offers.locator('.opblock-summary').click();
    const responses = offers.locator('.responses-wrapper');
    await responses.waitFor();
    await responses.locator('.response-col_status', { hasText: '200' }).first().waitFor();
    const example = responses.locator('.response', { has: page.locator('.response-col_status', { hasText: /^200$/ }) })
      .locator('.highlight-code').first();
    await example.waitFor();
    const text = await example.textContent();
    for (const member of ['"items"', '"next_cursor"', '"gpu_count_available"', '"usdc_per_gpu_hour"', '"rank_explanation"']) {
      assert.ok(text.includes(member), `the 200 example shows ${member}: ${text.slice(0, 300)}`);
    }
    await shot(page, 'offers-opened');
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
    await server.stop();
  }
});
