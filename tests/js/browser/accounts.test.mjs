// Browser: sign up, log in, see the Roles page, log out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKEND, TestServer, Client, confirmationToken, until } from '../lib/server.mjs';
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

// The account page: the address and whether it is confirmed; the banner's resend; a change of address
// mailed to the new one and opened from the mail, after which the account shows the new address.
test(`${BACKEND}: account page: confirm the address, resend, change it through the new address's link`, async () => {
  const server = await new TestServer(['--mail-poll-interval-ms', '50']).start();
  const shot = screenshotter(`account-email-${BACKEND}`);
  const browser = await launchBrowser(shot);
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${server.url}/#/signup`);
    await page.getByLabel('Full name').fill('Kay Example');
    await page.getByLabel('E-mail').fill('kay@example.com');
    await page.getByLabel(/^Password/).fill('correct-horse-battery');
    await page.getByRole('button', { name: 'Sign up' }).click();
    await page.getByRole('heading', { name: 'Roles' }).waitFor();

    const banner = page.getByRole('region', { name: 'Address confirmation' });
    await banner.getByRole('button', { name: 'Send the link again' }).click();
    await banner.getByText('Sent again to kay@example.com.').waitFor();
    await page.locator('#who').click();
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    assert.match(await page.locator('#account-email').textContent(), /kay@example\.com\s*not confirmed/);
    await shot(page, 'account-unconfirmed');
    const links = await until('two links', () => {
      const m = server.mailDrop().filter((t) => /^Subject: Confirm your e-mail/m.test(t));
      return m.length === 2 && m;
    }, 20000, 50);
    await page.goto(`${server.url}/#/confirm-email/${confirmationToken(links[1])}`);
    await page.getByRole('heading', { name: 'E-mail address confirmed' }).waitFor();
    await page.goto(`${server.url}/#/account`);
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    assert.match(await page.locator('#account-email').textContent(), /kay@example\.com\s*confirmed/);
    assert.equal(await banner.count(), 0);

    // A wrong password is named beside its field; the right one sends the link to the new address.
    await page.getByLabel('New e-mail').fill('kay@new.example');
    await page.getByLabel('Your password').fill('not-my-password');
    await page.getByRole('button', { name: 'Send the link' }).click();
    await page.locator('#f-password-error', { hasText: 'Password is wrong' }).waitFor();
    await page.getByLabel('Your password').fill('correct-horse-battery');
    await page.getByRole('button', { name: 'Send the link' }).click();
    await page.locator('.flash', { hasText: 'We sent a link to kay@new.example.' }).waitFor();
    assert.match(await page.locator('#pending-email').textContent(), /kay@new\.example/);
    assert.match(await page.locator('#account-email').textContent(), /kay@example\.com/, 'the old address until opened');
    await shot(page, 'account-change-pending');
    const moved = await until('the link to the new address', () => server.mailDrop()
      .find((t) => /^To: kay@new\.example\r?$/m.test(t) && /^Subject: Confirm your e-mail/m.test(t)), 20000, 50);
    await page.goto(`${server.url}/#/confirm-email/${confirmationToken(moved)}`);
    await page.getByRole('heading', { name: 'E-mail address confirmed' }).waitFor();
    assert.match(await page.getByRole('status').textContent(), /mail to kay@new\.example\./);
    assert.equal(await page.locator('#who').textContent(), 'kay@new.example');

    // The password, changed on the same page: a wrong current one is named beside its field; then another
    // session of the account ends, this page stays signed in, and the account is mailed.
    const other = new Client(server.url);
    await other.login('kay@new.example', 'correct-horse-battery');
    await page.goto(`${server.url}/#/account`);
    await page.getByLabel('Current password').fill('not-my-password');
    await page.getByLabel('New password').fill('kays-new-password-2');
    await page.getByRole('button', { name: 'Change the password' }).click();
    await page.locator('#f-current_password-error', { hasText: 'Current password is wrong' }).waitFor();
    await page.getByLabel('Current password').fill('correct-horse-battery');
    await page.getByRole('button', { name: 'Change the password' }).click();
    await page.locator('.flash', { hasText: 'Your password is changed; one other session was signed out.' }).waitFor();
    assert.equal((await other.request('GET', '/v1/me')).status, 401);
    assert.equal(await page.locator('#who').textContent(), 'kay@new.example', 'still signed in here');
    await until('the mail saying so', () => server.mailDrop()
      .find((t) => /^To: kay@new\.example\r?$/m.test(t) && /^Subject: GPUnex: your password was changed/m.test(t)), 20000, 50);
    await new Client(server.url).login('kay@new.example', 'kays-new-password-2');
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    await server.stop();
  }
});

// A forgotten password, from the log-in page: the address asked for, the link opened from the mail, a
// weak password named beside its field, the new one set, and the log-in page taking it (not the old one).
test(`${BACKEND}: forgot the password: a link from the log-in page sets a new one`, async () => {
  const server = await new TestServer(['--mail-poll-interval-ms', '50']).start();
  const shot = screenshotter(`password-reset-${BACKEND}`);
  const browser = await launchBrowser(shot);
  try {
    const c = new Client(server.url);
    await c.signupAndLogin('lee@example.com', 'correct-horse-battery', 'Lee Example');
    await server.confirmEmail(c, 'lee@example.com');
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${server.url}/#/login`);
    await page.getByRole('link', { name: 'Forgot your password?' }).click();
    await page.getByRole('heading', { name: 'Forgot your password?' }).waitFor();
    await page.getByLabel('E-mail').fill('not an address');
    await page.getByRole('button', { name: 'Mail me a link' }).click();
    await page.locator('#f-email-error', { hasText: 'not a valid e-mail address' }).waitFor();
    await page.getByLabel('E-mail').fill('Lee@Example.com');
    await page.getByRole('button', { name: 'Mail me a link' }).click();
    await page.getByRole('heading', { name: 'Check your mail' }).waitFor();
    assert.match(await page.getByRole('status').textContent(),
      /If an account has the address lee@example\.com, we mailed it a link .* for 60 minutes\./);
    await shot(page, 'reset-asked');

    const mail = await until('the reset mail', () => server.mailDrop()
      .find((t) => /^To: lee@example\.com\r?$/m.test(t) && /^Subject: Set a new password/m.test(t)), 20000, 50);
    const link = /(http:\/\/\S+\/#\/reset-password\/[A-Za-z0-9_-]+)/.exec(mail)[1];
    await page.goto(link);
    await page.getByRole('heading', { name: 'Set a new password' }).waitFor();
    await page.getByLabel(/^New password/).fill('short');
    await page.getByRole('button', { name: 'Set the password' }).click();
    await page.locator('#f-new_password-error', { hasText: 'at least 10 characters' }).waitFor();
    await page.getByLabel(/^New password/).fill('lees-new-password-2');
    await page.getByRole('button', { name: 'Set the password' }).click();
    await page.locator('.flash', { hasText: 'Your password is set. Log in as lee@example.com with it.' }).waitFor();
    await page.getByRole('heading', { name: 'Log in' }).waitFor();
    assert.equal((await c.request('GET', '/v1/me')).status, 401, 'the other session ended');
    await shot(page, 'reset-done');

    await page.getByLabel('E-mail').fill('lee@example.com');
    await page.getByLabel('Password').fill('correct-horse-battery');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.locator('.form-error', { hasText: 'e-mail or password is wrong' }).waitFor();
    await page.getByLabel('Password').fill('lees-new-password-2');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Roles' }).waitFor();
    assert.equal(await page.locator('#who').textContent(), 'lee@example.com');

    // The link, opened again, says it is used and offers a new one.
    await page.goto(link);
    await page.getByLabel(/^New password/).fill('lees-third-password-3');
    await page.getByRole('button', { name: 'Set the password' }).click();
    await page.getByRole('heading', { name: 'This link did not work' }).waitFor();
    assert.match(await page.getByRole('alert').first().textContent(), /used already/);
    await page.getByRole('link', { name: 'Ask for a new link' }).waitFor();
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    await server.stop();
  }
});
