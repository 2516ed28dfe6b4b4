// Browser, issue #14: a form with several bad fields shows every message at once, each beside its
// own input (aria-invalid, and an error element the input's aria-describedby names), in words a
// person understands; fixing one field clears its message only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer } from '../lib/server.mjs';
import { launchBrowser, screenshotter } from '../lib/browser.mjs';

// Asserts that `input` is marked invalid and described by its error element, which says `message`.
async function expectBeside(page, input, message) {
  const id = await input.getAttribute('id');
  const box = page.locator(`#${id}-error`);
  await box.filter({ hasText: message }).waitFor();
  assert.equal(await input.getAttribute('aria-invalid'), 'true', `${id} is marked invalid`);
  assert.ok((await input.getAttribute('aria-describedby')).split(' ').includes(`${id}-error`),
    `${id} is described by its error element`);
  // Beside the input: the error element sits in the same field wrapper, right under it.
  assert.ok(await input.evaluate((e, boxId) => e.parentElement.contains(document.getElementById(boxId)), `${id}-error`));
}

test(`${BACKEND}: three bad fields, three messages, each beside its input`, async () => {
  const server = await new TestServer().start();
  const shot = screenshotter(`form-errors-${BACKEND}`);
  const browser = await launchBrowser(shot);
  try {
    const p = await browser.newPage();
    const errors = [];
    p.on('pageerror', (e) => errors.push(e.message));

    // Sign-up form: a blank name, an e-mail without a domain, a short password.
    await p.goto(`${server.url}/#/signup`);
    await p.getByRole('heading', { name: 'Create your account' }).waitFor();
    await p.getByLabel('Full name').fill('  ');
    await p.getByLabel('E-mail').fill('ada@');
    await p.getByLabel(/^Password/).fill('short');
    await p.getByRole('button', { name: 'Sign up' }).click();
    await expectBeside(p, p.getByLabel('Full name'), 'Full name is required');
    await expectBeside(p, p.getByLabel('E-mail'), 'E-mail is not a valid e-mail address');
    await expectBeside(p, p.getByLabel(/^Password/), 'Password must be at least 10 characters');
    await shot(p, 'signup-three-errors');

    await p.getByLabel('Full name').fill('Ada Lovelace');
    await p.getByLabel('E-mail').fill('ada@example.com');
    await p.getByLabel(/^Password/).fill('correct-horse-battery');
    await p.getByRole('button', { name: 'Sign up' }).click();
    await p.getByRole('heading', { name: 'Roles' }).waitFor();

    // Application form: a blank legal name, an e-mail without a domain, and GPU 1 with 0 GPUs.
    await p.getByRole('link', { name: 'Apply to Provide GPUs' }).click();
    await p.getByRole('heading', { name: 'Apply to provide GPUs' }).waitFor();
    await p.getByLabel('Full legal name').fill('');
    await p.getByLabel('E-mail').fill('ada@');
    const gpu = p.getByRole('group', { name: 'GPU entry 1' });
    await gpu.getByLabel('GPU model').selectOption('L40S');
    await gpu.getByLabel('Number of GPUs').fill('0');
    await gpu.getByLabel('Host system RAM (GB)').fill('256');
    await gpu.getByLabel('Download speed (Gbit/s)').fill('10');
    await gpu.getByLabel('Upload speed (Gbit/s)').fill('10');
    await gpu.getByLabel('City').fill('London');
    await gpu.getByLabel('Country').fill('GB');
    await gpu.getByLabel('Region').fill('eu-west');
    await p.getByRole('group', { name: /UPS/ }).getByLabel('No').check();
    await p.getByLabel('Commitment period').selectOption('6');
    await p.getByRole('button', { name: 'Save as draft' }).click();

    const name = p.getByLabel('Full legal name');
    await expectBeside(p, name, 'Full name is required');
    await expectBeside(p, p.getByLabel('E-mail'), 'E-mail is not a valid e-mail address');
    await expectBeside(p, gpu.getByLabel('Number of GPUs'), 'GPU 1: number of GPUs must be between 1 and 1,024');
    // Exactly those three, each message once, nothing under the form, and the first bad field has the focus.
    assert.equal(await p.locator('[aria-invalid="true"]').count(), 3);
    const shown = (await p.locator('.field-error').allTextContents()).filter((t) => t.trim());
    assert.equal(shown.length, 3, `messages shown: ${JSON.stringify(shown)}`);
    assert.equal((await p.locator('.form-error').textContent()).trim(), '');
    assert.ok(await name.evaluate((e) => e === document.activeElement), 'the first bad field has the focus');
    await shot(p, 'apply-three-errors');

    // Fixing one field clears its message; the other two stay.
    await name.fill('Ada Lovelace');
    await p.getByRole('button', { name: 'Save as draft' }).click();
    await p.locator('#f-email-error', { hasText: 'E-mail is not a valid e-mail address' }).waitFor();
    await p.waitForFunction(() => !document.querySelector('#f-full-name-error').textContent);
    assert.equal(await name.getAttribute('aria-invalid'), null);
    assert.equal(await p.locator('[aria-invalid="true"]').count(), 2);

    await p.getByLabel('E-mail').fill('ada@example.com');
    await gpu.getByLabel('Number of GPUs').fill('4');
    await p.getByRole('button', { name: 'Save as draft' }).click();
    await p.getByRole('status').filter({ hasText: 'Draft saved' }).waitFor();
    assert.equal(await p.locator('[aria-invalid="true"]').count(), 0);
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    await server.stop();
  }
});
