// Real-browser journeys through the admin console (/console), driving
// Debian's chromium with playwright-core. Started by
// app/concierge/console_browser_test.go against real `concierge serve` and
// `worker` processes, with:
//   CONSOLE_BASE          http://127.0.0.1:port of a pod
//   CONSOLE_WORKSPACE     the workspace id (a Standard workspace)
//   CONSOLE_WORKSPACE_NAME its name
//   CONSOLE_OWNER_LINK    a one-time owner invitation made by the operator
//                         (`concierge admin user invite`); only its path is used,
//                         as the link names the configured public URL
//   CONSOLE_OWNER_EMAIL   the email it was made for
//   CONSOLE_SPARE_LINK    another invitation, never accepted: its page is audited
//   CONSOLE_PDF, CONSOLE_DOCX  small files to upload
//   CONCIERGECTL          the built conciergectl binary
//   SCREENSHOT_DIR        where the screenshots go (<screen>-desktop.png,
//                         <screen>-phone.png)
//   CHROMIUM              the browser (default /usr/bin/chromium)
// Exits non-zero on the first failed check. Every screen visited is audited
// with axe-core (WCAG 2.1 A and AA: zero violations) at desktop width and at
// 375 px, in contexts that bypass the CSP so axe-core can be injected; the
// journeys themselves run under the real CSP.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { AXE_PATH, AXE_TAGS, AXE_VERSION, DESKTOP, PHONE, env, goto, heading, requireEnv, startRun } from './harness.mjs';

const base = env('CONSOLE_BASE');
const ws = env('CONSOLE_WORKSPACE');
const ownerEmail = env('CONSOLE_OWNER_EMAIL');
const shots = env('SCREENSHOT_DIR');
requireEnv(['CONSOLE_BASE', 'CONSOLE_WORKSPACE', 'CONSOLE_WORKSPACE_NAME', 'CONSOLE_OWNER_LINK', 'CONSOLE_OWNER_EMAIL', 'CONSOLE_SPARE_LINK', 'CONSOLE_PDF', 'CONSOLE_DOCX', 'CONCIERGECTL', 'SCREENSHOT_DIR']);
// The links name the configured public URL; the pod listens elsewhere.
const pathOf = (link) => new URL(link).pathname;
const ownerLink = pathOf(env('CONSOLE_OWNER_LINK'));
const spareLink = pathOf(env('CONSOLE_SPARE_LINK'));
const W = `/console/w/${ws}`;
const PASSWORD = 'correct horse battery staple';
const HELPER_PASSWORD = 'a helper with a long password';

const run = await startRun({ shots });
const { step } = run;
// Every page of the console is on the one pod; opts.state reuses a
// signed-in context's cookies (harness.mjs: newPage).
const newPage = (opts) => run.newPage(base, opts);

async function webhook(secret) {
  const res = await fetch(base + '/api/webhooks/inbound', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Webhook-Secret': secret },
    body: JSON.stringify({ event: 'user.typing' }),
  });
  return res.status;
}

function ctl(key, ...args) {
  return execFileSync(env('CONCIERGECTL'), args, {
    env: { CONCIERGE_API_URL: base + '/api/v2', CONCIERGE_API_KEY: key, PATH: '/usr/bin:/bin' },
    encoding: 'utf8', timeout: 20_000,
  });
}

let ownerState;
let helperState;
try {
  const owner = await newPage();
  run.current = owner;

  await step('1. an invited owner sets a name and password and lands signed in', async () => {
    await goto(owner, ownerLink);
    await heading(owner, 'Join ');
    await owner.getByText(`with the email ${ownerEmail}`).waitFor();
    await owner.getByLabel('Your name').fill('Olivia Owner');
    await owner.getByLabel('Password').fill(PASSWORD);
    await owner.getByRole('button', { name: 'Accept the invitation' }).click();
    // An owner or admin lands on the agents; a helper on the workspace.
    await owner.waitForURL(`${base}${W}/agents`);
    await heading(owner, 'Agents');
    await owner.getByRole('button', { name: 'Sign out' }).waitFor();
    await owner.getByRole('link', { name: 'Your account' }).waitFor();
    await owner.clean();
  });

  await step('1. signs out, and signs in again with the password', async () => {
    await owner.getByRole('button', { name: 'Sign out' }).click();
    await owner.waitForURL(/\/console\/sign-in/);
    await heading(owner, 'Sign in');
    // Signed out for real: a workspace page asks to sign in again.
    await owner.goto(base + W + '/agents');
    await owner.waitForURL(/\/console\/sign-in/);
    await owner.getByLabel('Email').fill(ownerEmail);
    await owner.getByLabel('Password').fill('not the password');
    await owner.getByRole('button', { name: 'Sign in' }).click();
    await owner.locator('.error, .field-error', { hasText: 'The email or password is wrong.' }).first().waitFor();
    await owner.getByLabel('Password').fill(PASSWORD);
    await owner.getByRole('button', { name: 'Sign in' }).click();
    // Back where the sign-in page was asked for.
    await owner.waitForURL(`${base}${W}/agents`);
    await heading(owner, 'Agents');
    await owner.clean();
  });

  await step('1. the invitation link used twice shows "link is invalid or used"', async () => {
    const p = await newPage();
    const res = await p.goto(base + ownerLink);
    assert.ok(res.status() >= 400, `a used link answered ${res.status()}`);
    await p.getByText('This link is not valid: it may have been used already or have expired.').waitFor();
    assert.equal(await p.getByLabel('Password').count(), 0, 'no form on a used link');
    await p.clean();
    await p.context().close();
  });

  await step('2. create an agent with several fields, publish it, see the embed snippet and the preview', async () => {
    await goto(owner, W + '/agents/new');
    await owner.getByLabel('Slug').fill('help');
    await owner.locator('#f-name').fill('Acme Help Desk');
    await owner.locator('#f-systemPrompt').fill('You answer questions about Acme orders, politely and briefly.');
    await owner.locator('#f-welcomeMessage').fill('Hello! Ask me about shipping or returns.');
    await owner.locator('#f-suggestedQuestions').fill('How long does shipping take?\nCan I return an item?');
    await owner.locator('#f-fallbackMessage').fill('I do not know that yet; a person will follow up.');
    await owner.locator('#f-primaryColor').fill('#0f766e');
    await owner.getByRole('button', { name: 'Create the agent' }).click();
    await owner.waitForURL(`${base}${W}/agents/help?done=created`);
    await heading(owner, 'Acme Help Desk');
    await owner.getByText('The agent is created.').waitFor();
    assert.equal(await owner.locator('#f-welcomeMessage').inputValue(), 'Hello! Ask me about shipping or returns.');
    assert.equal(await owner.locator('#f-suggestedQuestions').inputValue(), 'How long does shipping take?\nCan I return an item?');
    assert.equal(await owner.locator('#f-primaryColor').inputValue(), '#0f766e');
    await owner.locator('p', { hasText: 'Status' }).locator('strong', { hasText: 'Not published' }).waitFor();
    assert.equal(await owner.locator('iframe.preview').count(), 0, 'no preview before publishing');
    await owner.getByRole('button', { name: 'Publish', exact: true }).click();
    await owner.getByText('The agent is published').waitFor();
    await owner.locator('p', { hasText: 'Status' }).locator('strong', { hasText: 'Published' }).waitFor();
    const snippet = await owner.locator('#snippet').textContent();
    assert.match(snippet, /<iframe src="http[^"]+\/chat\/[^"]+"/, 'the embed snippet');
    assert.match(snippet, /Acme Help Desk/);
    await owner.getByRole('button', { name: 'Copy' }).first().waitFor();
    // The live widget preview: the real widget, in a frame, showing the agent.
    const frame = owner.frameLocator('iframe.preview');
    await frame.locator('h1.cw-title', { hasText: 'Acme Help Desk' }).waitFor();
    await frame.locator('.cw-welcome', { hasText: 'Hello! Ask me about shipping or returns.' }).waitFor();
    await owner.clean();
  });

  await step('3. upload a PDF and a DOCX on the Knowledge page: progress, then READY without reloading', async () => {
    await owner.getByRole('main').getByRole('link', { name: 'Knowledge', exact: true }).click();
    await owner.waitForURL(`${base}${W}/agents/help/knowledge`);
    await heading(owner, 'Knowledge');
    await owner.locator('#sources .empty').waitFor();
    let navigations = 0;
    owner.on('framenavigated', (f) => { if (f === owner.mainFrame()) navigations++; });
    await owner.locator('#f-file').setInputFiles([env('CONSOLE_PDF'), env('CONSOLE_DOCX')]);
    await owner.getByRole('button', { name: /upload/i }).click();
    const uploads = owner.locator('[data-upload-list] li');
    await uploads.nth(1).waitFor();
    assert.equal(await owner.locator('[data-upload-list] progress').count(), 2, 'one progress bar per file');
    for (let i = 0; i < 2; i++) await uploads.nth(i).filter({ hasText: 'uploaded' }).waitFor();
    for (let i = 0; i < 2; i++) assert.equal(await uploads.nth(i).locator('progress').evaluate((b) => b.value), 100);
    // Both rows appear, then turn Ready as the worker indexes them (the
    // list polls itself; the page is never reloaded).
    const row = (ext) => owner.locator('#sources tbody tr', { has: owner.locator('th', { hasText: new RegExp(`\\.${ext}`) }) });
    for (const ext of ['pdf', 'docx']) await row(ext).locator('.status-READY', { hasText: 'Ready' }).waitFor({ timeout: 30_000 });
    for (const ext of ['pdf', 'docx']) assert.notEqual((await row(ext).locator('td').nth(2).textContent()).trim(), '0', `${ext}: chunks`);
    await owner.locator('#sources-live', { hasText: '2 ready' }).waitFor();
    assert.equal(navigations, 0, 'the page was not reloaded');
    await owner.clean();
  });

  // The playground: the answer is written into the page as it streams,
  // then the conversation's page takes its place with the citation and
  // the open retrieval trace, without a reload; a double click asks once.
  let session;
  await step('7. ask in the playground: the answer streams in, then its citation and trace show without a reload; a double click asks once', async () => {
    await goto(owner, W + '/playground');
    await heading(owner, 'Playground');
    await owner.getByLabel('Agent').selectOption('help');
    await owner.getByLabel('Your question').fill('What port does the service start on by default?');
    // What the form said and did while answering, and a mark a reload
    // would erase.
    await owner.evaluate(() => {
      window.__playground = { said: [], disabled: false, streamed: false };
      const status = document.querySelector('[data-play-status]');
      const button = document.querySelector('form.playground button[type="submit"]');
      const answer = document.querySelector('[data-play-answer]');
      new MutationObserver(() => {
        window.__playground.said.push(status.textContent);
        window.__playground.disabled ||= button.disabled;
      }).observe(status, { childList: true, characterData: true, subtree: true });
      new MutationObserver(() => { window.__playground.streamed ||= answer.textContent.length > 0; })
        .observe(answer, { childList: true, characterData: true, subtree: true });
    });
    await owner.getByRole('button', { name: 'Ask' }).dblclick();
    await owner.waitForURL(/\/playground\?session=ses_/);
    session = new URL(owner.url()).searchParams.get('session');
    const latest = owner.locator('#latest');
    await latest.locator('.msg-citations', { hasText: 'sample.pdf' }).waitFor();
    await owner.locator('[data-play-status]', { hasText: 'Answered.' }).waitFor();
    const seen = await owner.evaluate(() => window.__playground);
    assert.ok(seen, 'the page was reloaded');
    assert.ok(seen.said.includes('Answering…'), `the status said ${JSON.stringify(seen.said)}`);
    assert.ok(seen.disabled, 'the button was not disabled while answering');
    assert.ok(seen.streamed, 'no text was streamed in before the page was swapped');
    assert.match(await latest.locator('.msg-text').textContent(), /8080/);
    // The trace, open: passages with kept or dropped and why.
    const trace = latest.locator('details.trace[open]');
    await trace.locator('caption', { hasText: /Passages considered \(\d+, \d+ kept\)/ }).waitFor();
    assert.ok(await trace.locator('tbody tr.kept').count() >= 1, 'a kept passage');
    // The worker wrote questions for the passages: the kept one names the
    // question it was found by.
    await trace.locator('tbody tr.kept .hint', { hasText: 'found by its written question “Which port does the service listen on by default?”' }).first().waitFor();
    // One question and one answer: the double click sent one.
    assert.equal(await owner.locator('ol.transcript > li.msg:not(.msg-live)').count(), 2, 'messages after a double click');
    await owner.clean();
  });

  await step('7. a question outside the knowledge shows its fallback reason in words', async () => {
    await owner.getByRole('link', { name: 'New conversation' }).click();
    await heading(owner, 'Playground');
    await owner.getByLabel('Agent').selectOption('help');
    await owner.getByLabel('Your question').fill('Which penguins live in Antarctica?');
    await owner.getByRole('button', { name: 'Ask' }).click();
    await owner.locator('#latest .msg-fallback', { hasText: /^Fallback answer: \w/ }).waitFor();
    assert.equal(await owner.locator('ol.transcript > li.msg:not(.msg-live)').count(), 2);
    await owner.clean();
  });

  let keySecret;
  await step('4. create an API key, read its secret once, list agents with conciergectl', async () => {
    await goto(owner, W + '/settings');
    await heading(owner, 'Settings');
    await owner.locator('main a[href$="/settings/api-keys"]').click();
    await heading(owner, 'API keys');
    // The operator's workspace came with one key; this one is new.
    assert.equal(await owner.locator('tbody tr', { hasText: 'CRM sync' }).count(), 0);
    await owner.getByLabel('Name').fill('CRM sync');
    await owner.getByRole('button', { name: 'Create the key' }).click();
    await owner.getByText('The key CRM sync is created. Copy its secret now: you will not see it again.').waitFor();
    keySecret = (await owner.locator('#key-secret').textContent()).trim();
    assert.match(keySecret, /^\S{20,}$/, 'a secret is shown');
    await owner.locator('tbody tr', { hasText: 'CRM sync' }).getByText('never').waitFor();
    const out = ctl(keySecret, 'agents', 'list');
    assert.match(out, /SLUG/, out);
    assert.match(out, /\bhelp\b/, `the new agent is listed by conciergectl:\n${out}`);
    // Reloaded: the POST redirected to a GET (Post/Redirect/Get), so a
    // reload sends no form again, makes no second key and shows the secret
    // no more.
    await owner.reload();
    await heading(owner, 'API keys');
    await owner.getByText('This secret was shown once already, or waited too long, and is not shown again.').waitFor();
    assert.equal(await owner.locator('tbody tr', { hasText: 'CRM sync' }).count(), 1, 'one key named CRM sync');
    assert.equal(await owner.locator('#key-secret').count(), 0, 'the secret is gone after a reload');
    assert.ok(!(await owner.content()).includes(keySecret), 'the secret is nowhere on the reloaded page');
    await owner.locator('tbody tr', { hasText: 'CRM sync' }).getByText('Active').waitFor();
    await owner.clean();
  });

  let resetEdit; // the edit page of the reply made on the page
  await step('saved replies: the empty composer links the page; one reply made with the API, one on the page (a taken shortcut refused first)', async () => {
    // No saved reply yet: the thread's composer links the page.
    await goto(owner, W + '/inbox/' + session);
    await heading(owner, 'Conversation with Visitor');
    await owner.locator('#replies-empty').getByRole('link', { name: 'Manage saved replies' }).click();
    await heading(owner, 'Saved replies');
    await owner.getByText('No saved replies yet.').waitFor();
    // One through the API, with the key of step 4.
    const res = await fetch(base + '/api/v2/saved-replies', {
      method: 'POST', headers: { Authorization: `Bearer ${keySecret}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ shortcut: 'refund', title: 'Refunds', body: 'Refunds take 5 working days.' }),
    });
    assert.equal(res.status, 201, `saved reply refund: ${await res.text()}`);
    // The other on the page, reached from Settings; its shortcut first taken.
    await goto(owner, W + '/settings');
    await owner.locator('main a[href$="/settings/saved-replies"]').click();
    await heading(owner, 'Saved replies');
    await owner.getByLabel('Shortcut').fill('refund');
    await owner.getByLabel('Title').fill('Password reset');
    await owner.getByLabel('Text').fill('Use the reset link on the sign-in page.\nIt works for an hour.');
    await owner.getByRole('button', { name: 'Create the saved reply' }).click();
    await owner.locator('#f-shortcut-error', { hasText: 'Another saved reply already uses /refund.' }).waitFor();
    assert.equal(await owner.getByLabel('Shortcut').getAttribute('aria-invalid'), 'true');
    assert.equal(await owner.getByLabel('Title').inputValue(), 'Password reset', 'what was typed is kept');
    await owner.getByLabel('Shortcut').fill('reset');
    await owner.getByRole('button', { name: 'Create the saved reply' }).click();
    await owner.waitForURL(`${base}${W}/settings/saved-replies?done=replycreated`);
    await owner.getByText('The saved reply is created.').waitFor();
    const row = owner.locator('tbody tr', { hasText: '/reset' });
    await row.getByText('Use the reset link on the sign-in page.', { exact: true }).waitFor();
    assert.deepEqual(await owner.locator('tbody tr code').allTextContents(), ['/refund', '/reset'], 'listed in shortcut order');
    resetEdit = new URL(await row.getByRole('link', { name: 'Edit /reset' }).evaluate((a) => a.href)).pathname;
    await owner.clean();
  });

  await step('inbox: a thread\'s composer inserts a saved reply with "/" and the keyboard', async () => {
    await goto(owner, W + '/inbox/' + session);
    await heading(owner, 'Conversation with Visitor');
    const box = owner.getByLabel('Message', { exact: true });
    const list = owner.getByRole('listbox', { name: 'Saved replies' });
    await box.fill('');
    await box.pressSequentially('/re');
    await list.waitFor();
    assert.equal(await list.getByRole('option').count(), 2, 'both replies match /re');
    await box.pressSequentially('s');
    assert.equal(await list.getByRole('option').count(), 1, 'only /reset matches /res');
    await box.press('Escape');
    await list.waitFor({ state: 'hidden' });
    await box.fill('');
    await box.pressSequentially('/');
    await list.waitFor();
    await box.press('ArrowDown'); // the second, by shortcut order: reset
    assert.equal(await list.getByRole('option', { selected: true }).textContent(), '/reset Password resetUse the reset link on the sign-in page.\nIt works for an hour.');
    await box.press('Enter');
    await list.waitFor({ state: 'hidden' });
    assert.equal(await box.inputValue(), 'Use the reset link on the sign-in page.\nIt works for an hour.');
    await owner.clean();
  });

  await step('inbox: "Suggest a reply" lists the cited sources under the composer, as text, linking http(s) only', async () => {
    // The suggestion's answer is made up here, so the page is tested on a
    // title that is markup and addresses that must not become links.
    let answer = { status: 200, body: {
      draft: 'Returns are free within 30 days.', fallback: false, citations: [
        { title: 'Returns <img src=x onerror=alert(1)>', url: 'https://shop.example/returns', sourceId: 'src_a' },
        { title: 'Returns, again', url: 'https://shop.example/returns#more', sourceId: 'src_a' },
        { title: 'Internal FAQ', url: 'javascript:alert(1)', sourceId: 'src_b' },
        { title: 'Shipping guide', sourceId: 'src_c' },
      ] } };
    await owner.route('**/inbox/*/suggestion', (route) => route.fulfill({ status: answer.status, contentType: 'application/json', body: JSON.stringify(answer.body) }));
    await goto(owner, W + '/inbox/' + session);
    await heading(owner, 'Conversation with Visitor');
    const sources = owner.getByRole('list', { name: 'Sources the draft cites' });
    assert.equal(await sources.count(), 0, 'no sources before a suggestion');
    await owner.getByRole('button', { name: 'Suggest a reply' }).click();
    await sources.waitFor();
    assert.equal(await owner.getByLabel('Message', { exact: true }).inputValue(), 'Returns are free within 30 days.');
    const items = sources.getByRole('listitem');
    assert.deepEqual(await items.allTextContents(), ['Returns <img src=x onerror=alert(1)>', 'Internal FAQ', 'Shipping guide'], 'one item per source, titles as text');
    const links = sources.getByRole('link');
    assert.equal(await links.count(), 1, 'only the https address is a link');
    assert.equal(await links.first().getAttribute('href'), 'https://shop.example/returns');
    assert.equal(await links.first().getAttribute('target'), '_blank');
    assert.equal(await sources.locator('img').count(), 0, 'the title is not markup');
    await owner.locator('#suggest-status', { hasText: 'It cites 3 sources, listed under the message box.' }).waitFor();

    // A suggestion that fails clears the list.
    answer = { status: 503, body: { error: { code: 'unavailable', message: 'x' } } };
    await owner.getByRole('button', { name: 'Suggest a reply' }).click();
    await owner.locator('#suggest-status', { hasText: 'No draft could be made.' }).waitFor();
    await sources.waitFor({ state: 'hidden' });

    // Sending the message clears it too (the send itself is stopped here:
    // this conversation's state belongs to the later steps).
    answer = { status: 200, body: { draft: 'See the guide.', fallback: false, citations: [{ title: 'Shipping guide', sourceId: 'src_c' }] } };
    await owner.getByRole('button', { name: 'Suggest a reply' }).click();
    await owner.locator('#suggest-status', { hasText: 'It cites one source' }).waitFor();
    assert.deepEqual(await items.allTextContents(), ['Shipping guide']);
    await owner.evaluate(() => {
      const form = document.getElementById('composer-form');
      form.addEventListener('submit', (e) => e.preventDefault());
      form.requestSubmit();
    });
    await sources.waitFor({ state: 'hidden' });
    await owner.unroute('**/inbox/*/suggestion');
    await owner.clean();
  });

  await step('5. reveal and rotate the webhook secret (password again): old works in the grace period, new works', async () => {
    await goto(owner, W + '/settings/webhook-secret');
    await heading(owner, 'Webhook secret');
    await owner.getByText('The secret is hidden.').waitFor();
    await owner.getByLabel('Your password').fill('not the password');
    await owner.getByRole('button', { name: 'Show the secret' }).click();
    await owner.locator('.field-error', { hasText: 'The password is wrong.' }).waitFor();
    await owner.getByLabel('Your password').fill(PASSWORD);
    await owner.getByRole('button', { name: 'Show the secret' }).click();
    const old = (await owner.locator('#webhook-secret').textContent()).trim();
    assert.equal(await webhook(old), 200, 'the revealed secret authenticates the webhook');
    assert.equal(await webhook(old + 'x'), 401, 'a wrong secret is refused');
    await owner.getByLabel('1 hour').check();
    await owner.getByRole('button', { name: 'Make a new secret' }).click();
    await heading(owner, 'Make a new webhook secret?');
    await owner.getByText('The old one keeps working for: 1 hour.').waitFor();
    await owner.getByLabel('Your password').fill(PASSWORD);
    await owner.getByRole('button', { name: 'Yes, make a new secret' }).click();
    await owner.getByText('A new secret is made.').waitFor();
    const fresh = (await owner.locator('#webhook-secret').textContent()).trim();
    assert.notEqual(fresh, old, 'a new secret');
    await owner.getByText('The previous secret is still accepted until').waitFor();
    assert.equal(await webhook(fresh), 200, 'the new secret works');
    assert.equal(await webhook(old), 200, 'the old secret still works during the grace period');
    await owner.reload();
    await owner.getByText('This secret was shown once already').waitFor();
    assert.equal(await owner.locator('#webhook-secret').count(), 0, 'hidden after a reload');
    assert.equal(await webhook(fresh), 200, 'the reload did not rotate the secret again');
    await goto(owner, W + '/settings/webhook-secret');
    await owner.getByText('The secret is hidden.').waitFor();
    assert.equal(await owner.locator('#webhook-secret').count(), 0, 'hidden again when opened again');
    await owner.clean();
  });

  let helperLink;
  await step('6. invite a member with role agent: the link is shown', async () => {
    await goto(owner, W + '/members');
    await heading(owner, 'Members');
    await owner.getByLabel('Email').fill('helper@example.com');
    await owner.locator('#invite-role-agent').check();
    await owner.getByRole('button', { name: 'Invite', exact: true }).click();
    await owner.getByText('The invitation is made. Send this link to helper@example.com').waitFor();
    helperLink = pathOf((await owner.locator('#invite-link').textContent()).trim());
    assert.match(helperLink, /^\/console\/invitations\//);
    await owner.locator('section', { hasText: 'Open invitations' }).getByText('helper@example.com (agent)').waitFor();
    await owner.clean();
    ownerState = await owner.context().storageState();
  });

  await step('6. the helper accepts in a second browser: workspace yes, settings and agents 403', async () => {
    const helper = await newPage();
    run.current = helper;
    await goto(helper, helperLink);
    await helper.getByText('as agent with the email helper@example.com').waitFor();
    await helper.getByLabel('Your name').fill('Harry Helper');
    await helper.getByLabel('Password').fill(HELPER_PASSWORD);
    await helper.getByRole('button', { name: 'Accept the invitation' }).click();
    // A helper's home is the inbox.
    await helper.waitForURL(`${base}${W}/inbox`);
    await heading(helper, 'Inbox');
    await helper.getByRole('link', { name: 'Needs a person' }).waitFor();
    await helper.locator('header .ws', { hasText: env('CONSOLE_WORKSPACE_NAME') }).waitFor();
    assert.equal(await helper.getByRole('link', { name: 'Agents', exact: true }).count(), 0, 'no Agents link for a helper');
    assert.equal(await helper.getByRole('link', { name: 'API keys' }).count(), 0, 'no settings links for a helper');
    for (const path of ['/settings', '/settings/api-keys', '/settings/webhook-secret', '/members', '/agents', '/agents/help', '/agents/help/knowledge']) {
      await goto(helper, W + path, 403);
      await helper.getByText('You may not do this').waitFor();
      assert.ok(!(await helper.content()).includes('Acme Help Desk'), `${path} shows the agent`);
    }
    // Saved replies: the list read-only, no form, and no edit page.
    await goto(helper, W + '/settings/saved-replies');
    await helper.getByText('Owners and admins create and change saved replies').waitFor();
    await helper.locator('tbody tr', { hasText: '/reset' }).waitFor();
    assert.equal(await helper.getByRole('button', { name: 'Create the saved reply' }).count(), 0, 'no create form for a helper');
    assert.equal(await helper.getByRole('link', { name: /^Edit/ }).count(), 0, 'no edit links for a helper');
    await goto(helper, W + '/settings/saved-replies/rpl_00000000000000000000000000/delete', 403);
    await goto(helper, W, 200);
    await heading(helper, 'Inbox');
    await helper.clean();
    helperState = await helper.context().storageState();
    await helper.context().close();
    run.current = owner;
  });

  await step('auto-assignment: the switch on Settings → Integrations, its state in words, by mouse and keyboard', async () => {
    await goto(owner, W + '/settings/integrations');
    await heading(owner, 'Integrations');
    const name = 'Assign handed-off conversations automatically';
    const state = async (checked, words) => {
      assert.equal(await owner.getByRole('switch', { name }).getAttribute('aria-checked'), checked);
      await owner.getByText(words).waitFor();
    };
    await state('false', 'Off: handed-off conversations wait in Needs a person.');
    await owner.getByRole('switch', { name }).click();
    await owner.getByText('Auto-assignment is on.').waitFor();
    await state('true', 'On: handed-off conversations go to an available member.');
    await owner.getByRole('switch', { name }).focus();
    await owner.keyboard.press('Space');
    await owner.getByText('Auto-assignment is off.').waitFor();
    await state('false', 'Off: handed-off conversations wait in Needs a person.');
    // Left on, so the screenshot shows it on.
    await owner.getByRole('switch', { name }).press('Enter');
    await owner.getByText('Auto-assignment is on.').waitFor();
    await state('true', 'On: handed-off conversations go to an available member.');
    await owner.clean();
  });

  await step('an agent with a long name: the agent filters still fit a phone (checked with every screen below)', async () => {
    await goto(owner, W + '/agents/new');
    await owner.getByLabel('Slug').fill('emea');
    await owner.locator('#f-name').fill('Acme Corporation Customer Support Assistant for Europe, the Middle East and Africa, in English');
    await owner.getByRole('button', { name: 'Create the agent' }).click();
    await owner.waitForURL(`${base}${W}/agents/emea?done=created`);
    await heading(owner, 'Acme Corporation Customer Support Assistant for Europe, the Middle East and Africa, in English');
    await owner.clean();
  });

  await step('a refused upload says its own reason, not that of a failed source listed on the page', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'console-upload-'));
    writeFileSync(join(dir, 'broken.pdf'), 'not a PDF at all');
    writeFileSync(join(dir, 'empty.txt'), '');
    await goto(owner, W + '/agents/emea/knowledge');
    await heading(owner, 'Knowledge');
    await owner.locator('#f-file').setInputFiles(join(dir, 'broken.pdf'));
    await owner.getByRole('button', { name: /upload/i }).click();
    await owner.locator('[data-upload-list] li', { hasText: 'uploaded' }).waitFor();
    const failed = owner.locator('#sources tbody tr', { has: owner.locator('th', { hasText: 'broken.pdf' }) });
    await failed.locator('.status-FAILED').waitFor({ timeout: 30_000 });
    await owner.locator('#f-file').setInputFiles(join(dir, 'empty.txt'));
    await owner.getByRole('button', { name: /upload/i }).click();
    const refused = owner.locator('[data-upload-list] li', { hasText: 'empty.txt' });
    await refused.filter({ hasText: 'not uploaded' }).waitFor();
    const said = await refused.textContent();
    assert.match(said, /empty/, `the refusal: ${said}`);
    assert.doesNotMatch(said, /PDF/, `another source's reason: ${said}`);
    rmSync(dir, { recursive: true, force: true });
    await owner.clean();
  });

  await step('a wrong current password is said on its field', async () => {
    await goto(owner, '/console/account');
    await owner.getByLabel('Current password').fill('not the password at all');
    await owner.getByLabel('New password').fill('a new password long enough');
    await owner.getByRole('button', { name: 'Change the password' }).click();
    await owner.locator('#f-current-error', { hasText: 'The current password is wrong.' }).waitFor();
    assert.equal(await owner.getByLabel('Current password').getAttribute('aria-invalid'), 'true');
    assert.equal(await owner.evaluate(() => document.activeElement && document.activeElement.id), 'f-current', 'the refused field has the focus');
    await owner.clean();
  });

  await step('at 1024 px every source\'s actions are in view, not cut off by the table\'s scrolling box', async () => {
    await owner.setViewportSize(DESKTOP);
    await goto(owner, W + '/agents/help/knowledge');
    await owner.locator('#sources tbody tr').first().waitFor();
    const cut = await owner.evaluate(() => {
      const box = document.querySelector('#sources .table').getBoundingClientRect();
      return [...document.querySelectorAll('#sources td.row-actions :is(button, a)')]
        .filter((e) => e.getBoundingClientRect().right > box.right + 1).map((e) => e.textContent.trim());
    });
    assert.deepEqual(cut, [], 'actions past the table\'s visible edge');
    await owner.clean();
  });

  await step('a refused field takes the focus and is scrolled into view', async () => {
    await goto(owner, W + '/agents/help/knowledge');
    await owner.getByLabel('Page address').fill('notaurl');
    await owner.getByLabel('Page address').press('Enter');
    await owner.locator('[aria-invalid="true"]').first().waitFor();
    const focused = await owner.evaluate(() => {
      const e = document.activeElement, r = e.getBoundingClientRect();
      return { invalid: e.getAttribute('aria-invalid'), visible: r.top >= 0 && r.bottom <= window.innerHeight };
    });
    assert.deepEqual(focused, { invalid: 'true', visible: true });
    await owner.clean();
  });

  // Every screen, at desktop width and at 375 px: axe-core and a screenshot.
  const signedIn = [
    ['agents', W + '/agents', 'Agents'],
    ['agent-edit', W + '/agents/help', 'Acme Help Desk'],
    ['knowledge', W + '/agents/help/knowledge', 'Knowledge'],
    ['settings', W + '/settings', 'Settings'],
    ['api-keys', W + '/settings/api-keys', 'API keys'],
    ['webhook-secret', W + '/settings/webhook-secret', 'Webhook secret'],
    ['integrations', W + '/settings/integrations', 'Integrations'],
    // The same page scrolled to the auto-assignment switch (left on), as
    // after turning it on (another URL: a fragment alone does not navigate).
    ['auto-assign', W + '/settings/integrations?done=autoassignon#autoassign-h', 'Integrations'],
    ['deliveries', W + '/settings/deliveries', 'Delivery log'],
    ['plan', W + '/settings/plan', 'Plan and features'],
    ['saved-replies', W + '/settings/saved-replies', 'Saved replies'],
    ['saved-reply-edit', resetEdit, 'Edit /reset'],
    ['members', W + '/members', 'Members'],
    ['account', '/console/account', 'Your account'],
    ['conversations', W + '/conversations', 'Conversations'],
    ['transcript', W + '/conversations/' + session, 'Conversation with help'],
    // The playground with its answer and the answer's trace open.
    ['playground', W + '/playground?session=' + session, 'Playground'],
    // Inbox: the open conversations, and a thread with its composer.
    ['inbox', W + '/inbox?view=resolved', 'Inbox'],
    ['thread', W + '/inbox/' + session, 'Conversation with Visitor'],
  ];
  for (const [kind, viewport] of [['desktop', DESKTOP], ['phone', PHONE]]) {
    await step(`axe ${AXE_VERSION} and screenshots, ${kind} (${viewport.width} px): every screen`, async () => {
      const anon = await newPage({ viewport, bypassCSP: true });
      run.current = anon;
      await goto(anon, '/console/sign-in');
      await heading(anon, 'Sign in');
      await run.screen(anon, 'sign-in', kind);
      await goto(anon, spareLink);
      await anon.getByRole('button', { name: 'Accept the invitation' }).waitFor();
      await run.screen(anon, 'accept-invitation', kind);
      await anon.clean();
      await anon.context().close();

      const p = await newPage({ viewport, bypassCSP: true, state: ownerState });
      run.current = p;
      for (const [name, path, title] of signedIn) {
        await goto(p, path);
        await heading(p, title);
        if (name === 'knowledge') await p.locator('#sources-live', { hasText: '2 ready' }).waitFor();
        await run.screen(p, name, kind);
        if (name === 'agent-edit') {
          // The embed snippet and the live preview, further down the page.
          await p.frameLocator('iframe.preview').locator('h1.cw-title', { hasText: 'Acme Help Desk' }).waitFor();
          await p.locator('#embed-h').scrollIntoViewIfNeeded();
          await p.evaluate(() => document.getElementById('embed-h').scrollIntoView({ block: 'start' }));
          await p.screenshot({ path: join(shots, `agent-embed-${kind}.png`) });
        }
        if (name === 'saved-replies') {
          // The list, under the create form.
          await p.evaluate(() => document.querySelector('main .table').scrollIntoView({ block: 'start' }));
          await p.screenshot({ path: join(shots, `saved-replies-list-${kind}.png`) });
        }
        if (name === 'playground') {
          // The answer's retrieval trace, open, further down the page,
          // with what the answerability was read from.
          await p.locator('#latest details.trace[open] dt', { hasText: 'What the chance was read from' }).waitFor();
          await p.evaluate(() => document.querySelector('#latest details.trace[open]').scrollIntoView({ block: 'start' }));
          await p.screenshot({ path: join(shots, `playground-trace-${kind}.png`) });
        }
      }
      // The shown-once states: a new key's secret and a member's invitation link.
      await goto(p, W + '/settings/api-keys');
      await p.getByLabel('Name').fill(`Screenshot ${kind}`);
      await p.getByRole('button', { name: 'Create the key' }).click();
      await p.locator('#key-secret').waitFor();
      await run.screen(p, 'api-key-created', kind);
      await p.clean();
      await p.context().close();

      // What a helper sees: the workspace, and the 403 page.
      const h = await newPage({ viewport, bypassCSP: true, state: helperState });
      run.current = h;
      await goto(h, W);
      await heading(h, 'Inbox');
      await run.screen(h, 'workspace-home', kind);
      await goto(h, W + '/settings', 403);
      await run.screen(h, 'forbidden', kind);
      await h.clean();
      await h.context().close();
    });
  }

  await step('the audit is live: a nameless button and faint text are caught', async () => {
    const p = await newPage({ bypassCSP: true });
    await goto(p, '/console/sign-in');
    await p.addScriptTag({ path: AXE_PATH });
    await p.evaluate(() => {
      const canary = document.createElement('div');
      canary.id = 'axe-canary';
      const faint = document.createElement('p');
      faint.textContent = 'faint text';
      faint.style.color = '#c0c0c0';
      canary.append(document.createElement('button'), faint);
      document.querySelector('main').append(canary);
    });
    const caught = await p.evaluate((tags) => window.axe.run('#axe-canary', { runOnly: { type: 'tag', values: tags } }).then((res) => res.violations.map((v) => v.id)), AXE_TAGS);
    assert.deepEqual(caught.sort(), ['button-name', 'color-contrast']);
    await p.context().close();
  });
} catch {
  await run.reportFailure('failure.png');
} finally {
  await run.browser.close();
}

run.finish();
