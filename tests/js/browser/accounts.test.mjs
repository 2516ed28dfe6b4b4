// Browser: sign up, log in, see the Roles page, log out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer } from '../lib/server.mjs';
import { launchBrowser, screenshotter } from '../lib/browser.mjs';

test(`${BACKEND}: sign up, log in, Roles page, log out`, async () => {
  const server = await new TestServer().start();
  const shot = screenshotter(`accounts-${BACKEND}`);
  const browser = await launchBrowser(shot);
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));

    await page.goto(server.url + '/');
    await page.getByRole('heading', { name: /Rent NVIDIA GPUs/ }).waitFor();
    await shot(page, 'home');

    await page.getByRole('link', { name: 'Sign up' }).first().click();
    await page.getByRole('heading', { name: 'Create your account' }).waitFor();
    // A too-short password is refused by the server, and the message sits next to the field.
    await page.getByLabel('Full name').fill('Grace Hopper');
    await page.getByLabel('E-mail').fill('grace@example.com');
    await page.getByLabel(/^Password/).fill('short');
    await page.getByRole('button', { name: 'Sign up' }).click();
    await page.locator('#f-password-error', { hasText: 'at least 10 characters' }).waitFor();
    assert.equal(await page.getByLabel(/^Password/).getAttribute('aria-invalid'), 'true');
    await shot(page, 'signup-error');

    await page.getByLabel(/^Password/).fill('correct-horse-battery');
    await page.getByRole('button', { name: 'Sign up' }).click();
    await page.getByRole('heading', { name: 'Roles' }).waitFor();
    assert.equal(await page.locator('#who').textContent(), 'grace@example.com');
    await page.getByRole('link', { name: 'Apply to Provide GPUs' }).waitFor();
    await shot(page, 'roles-after-signup');

    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Log in' }).waitFor();
    await shot(page, 'logged-out');
    // The session is gone on the server too.
    const me = await page.evaluate(async () => (await fetch('/v1/me')).status);
    assert.equal(me, 401);

    await page.getByLabel('E-mail').fill('grace@example.com');
    await page.getByLabel('Password').fill('wrong-password-1');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.locator('.form-error', { hasText: 'e-mail or password is wrong' }).waitFor();
    await shot(page, 'login-error');

    await page.getByLabel('Password').fill('correct-horse-battery');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Roles' }).waitFor();
    const roles = await page.getByRole('list', { name: 'Your roles' }).textContent();
    assert.match(roles, /customer/);
    await shot(page, 'roles-after-login');

    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Log in' }).waitFor();
    await shot(page, 'logged-out-again');
    assert.deepEqual(errors, []);

    // Every page visited was saved without the test asking (close() waits for those under way).
    await browser.close();
    for (const visit of ['visit-home', 'visit-signup', 'visit-roles', 'visit-login']) {
      assert.ok(shot.saved.includes(visit), `${visit} not in ${shot.saved}`);
    }
  } finally {
    await browser.close();
    await server.stop();
  }
});
