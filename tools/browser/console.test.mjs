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
import { chromium } from 'playwright-core';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import assert from 'node:assert/strict';

const env = (k, d) => process.env[k] ?? d;
const base = env('CONSOLE_BASE');
const ws = env('CONSOLE_WORKSPACE');
const ownerEmail = env('CONSOLE_OWNER_EMAIL');
const shots = env('SCREENSHOT_DIR');
for (const k of ['CONSOLE_BASE', 'CONSOLE_WORKSPACE', 'CONSOLE_WORKSPACE_NAME', 'CONSOLE_OWNER_LINK', 'CONSOLE_OWNER_EMAIL', 'CONSOLE_SPARE_LINK', 'CONSOLE_PDF', 'CONSOLE_DOCX', 'CONCIERGECTL', 'SCREENSHOT_DIR']) {
  if (!process.env[k]) { console.error(`${k} is not set`); process.exit(2); }
}
// The links name the configured public URL; the pod listens elsewhere.
const pathOf = (link) => new URL(link).pathname;
const ownerLink = pathOf(env('CONSOLE_OWNER_LINK'));
const spareLink = pathOf(env('CONSOLE_SPARE_LINK'));
const W = `/console/w/${ws}`;
const PASSWORD = 'correct horse battery staple';
const HELPER_PASSWORD = 'a helper with a long password';
const require = createRequire(import.meta.url);
const AXE_PATH = require.resolve('axe-core/axe.min.js');
const AXE_VERSION = require('axe-core/package.json').version;
const AXE_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];
const DESKTOP = { width: 1024, height: 720 };
const PHONE = { width: 375, height: 667 };
mkdirSync(shots, { recursive: true });

const started = Date.now();
let passed = 0;
let failed = false;
const audited = [];

const browser = await chromium.launch({
  executablePath: env('CHROMIUM', '/usr/bin/chromium'),
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  timeout: 30_000,
});

// newPage opens a fresh context (own cookies) with the checks every page
// gets: page errors, CSP violations, dialogs, requests that leave the
// service. opts.state reuses a signed-in context's cookies.
async function newPage(opts = {}) {
  const context = await browser.newContext({ viewport: opts.viewport || DESKTOP, bypassCSP: !!opts.bypassCSP, storageState: opts.state });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const watch = { errors: [], dialogs: [], foreign: [], console: [] };
  page.on('pageerror', (e) => watch.errors.push(String(e)));
  page.on('console', (m) => watch.console.push(`${m.type()}: ${m.text()}`));
  page.on('dialog', async (d) => { watch.dialogs.push(d.message()); await d.dismiss(); });
  page.on('request', (r) => {
    if (!r.url().startsWith(base) && !r.url().startsWith('data:')) watch.foreign.push(r.url());
  });
  await page.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__csp.push({ directive: e.violatedDirective, blocked: e.blockedURI, source: e.sourceFile }));
  });
  page.watch = watch;
  page.clean = async () => {
    assert.deepEqual(watch.errors, [], 'page errors');
    assert.deepEqual(watch.dialogs, [], 'dialogs fired');
    assert.deepEqual(watch.foreign, [], 'requests outside the service');
    if (opts.bypassCSP) return;
    assert.deepEqual(await page.evaluate(() => window.__csp), [], 'CSP violations');
  };
  return page;
}

let current; // the page whose screenshot is taken when a step fails
async function step(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    passed++;
    console.log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    console.log(`FAIL ${name}: ${e && e.stack || e}`);
    failed = true;
    throw e;
  }
}

// heading waits for the page's h1 (every console page has exactly one).
async function heading(p, text) {
  await p.locator('main h1', { hasText: text }).waitFor();
}

// goto opens a console path and checks the status the browser got.
async function goto(p, path, status = 200) {
  const res = await p.goto(base + path);
  assert.equal(res.status(), status, `GET ${path}`);
  return res;
}

// audit runs axe-core on the page as it is; any WCAG 2.1 A/AA violation
// fails, listing the rule, the elements and the help page.
async function audit(p, state) {
  const t0 = Date.now();
  if (!(await p.evaluate(() => !!window.axe))) await p.addScriptTag({ path: AXE_PATH });
  const r = await p.evaluate(async (tags) => {
    const res = await window.axe.run(document, { runOnly: { type: 'tag', values: [...tags, 'best-practice'] }, resultTypes: ['violations'] });
    const wcag = (v) => v.tags.some((t) => tags.includes(t));
    return {
      passes: res.passes.filter(wcag).length,
      violations: res.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, helpUrl: v.helpUrl, wcag: wcag(v), nodes: v.nodes.map((n) => ({ target: n.target.join(' '), why: n.failureSummary || '' })) })),
    };
  }, AXE_TAGS);
  const failing = r.violations.filter((v) => v.wcag);
  for (const v of r.violations.filter((x) => !x.wcag)) console.log(`     axe "${state}": best practice (not failed): ${v.id} ${v.nodes.map((n) => n.target).join(', ')}`);
  audited.push(`${state}: ${failing.length} violations (${r.passes} rules passed, ${Date.now() - t0} ms)`);
  if (failing.length) {
    assert.fail(`axe-core ${AXE_VERSION}: ${failing.length} violation(s) in "${state}":\n` + failing.map((v) => `${v.id} [${v.impact}] ${v.help}\n    ${v.helpUrl}\n` +
      v.nodes.map((n) => `    - ${n.target}\n      ${n.why.replace(/\n/g, '\n      ')}`).join('\n')).join('\n'));
  }
}

// screen audits the page at its current viewport and, for a 375 px one,
// checks that nothing scrolls sideways; then takes the screenshot.
async function screen(p, name, kind) {
  if (kind === 'phone') {
    const d = await p.evaluate(() => ({
      sw: document.documentElement.scrollWidth, w: window.innerWidth,
      // The outermost elements that stick out, to say what to fix.
      wide: [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && !(e.parentElement && e.parentElement.getBoundingClientRect().right > window.innerWidth + 1))
        .slice(0, 5).map((e) => `${e.tagName.toLowerCase()}${e.id ? '#' + e.id : ''}${e.className ? '.' + String(e.className).split(' ').join('.') : ''} (${Math.round(e.getBoundingClientRect().right)} px)`),
    }));
    assert.ok(d.sw <= d.w, `${name}: horizontal scroll at 375 px (${d.sw} > ${d.w}): ${d.wide.join(', ')}`);
  }
  await audit(p, `${name}, ${kind}`);
  await p.screenshot({ path: join(shots, `${name}-${kind}.png`) });
}

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
  current = owner;

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

  await step('inbox: a thread\'s composer inserts a saved reply with "/" and the keyboard', async () => {
    // Two saved replies, made with the API key of step 4.
    for (const r of [{ shortcut: 'refund', title: 'Refunds', body: 'Refunds take 5 working days.' },
      { shortcut: 'reset', title: 'Password reset', body: 'Use the reset link on the sign-in page.' }]) {
      const res = await fetch(base + '/api/v2/saved-replies', {
        method: 'POST', headers: { Authorization: `Bearer ${keySecret}`, 'Content-Type': 'application/json' }, body: JSON.stringify(r),
      });
      assert.equal(res.status, 201, `saved reply ${r.shortcut}: ${await res.text()}`);
    }
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
    assert.equal(await list.getByRole('option', { selected: true }).textContent(), '/reset Password resetUse the reset link on the sign-in page.');
    await box.press('Enter');
    await list.waitFor({ state: 'hidden' });
    assert.equal(await box.inputValue(), 'Use the reset link on the sign-in page.');
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
    current = helper;
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
    await goto(helper, W, 200);
    await heading(helper, 'Inbox');
    await helper.clean();
    helperState = await helper.context().storageState();
    await helper.context().close();
    current = owner;
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
      current = anon;
      await goto(anon, '/console/sign-in');
      await heading(anon, 'Sign in');
      await screen(anon, 'sign-in', kind);
      await goto(anon, spareLink);
      await anon.getByRole('button', { name: 'Accept the invitation' }).waitFor();
      await screen(anon, 'accept-invitation', kind);
      await anon.clean();
      await anon.context().close();

      const p = await newPage({ viewport, bypassCSP: true, state: ownerState });
      current = p;
      for (const [name, path, title] of signedIn) {
        await goto(p, path);
        await heading(p, title);
        if (name === 'knowledge') await p.locator('#sources-live', { hasText: '2 ready' }).waitFor();
        await screen(p, name, kind);
        if (name === 'agent-edit') {
          // The embed snippet and the live preview, further down the page.
          await p.frameLocator('iframe.preview').locator('h1.cw-title', { hasText: 'Acme Help Desk' }).waitFor();
          await p.locator('#embed-h').scrollIntoViewIfNeeded();
          await p.evaluate(() => document.getElementById('embed-h').scrollIntoView({ block: 'start' }));
          await p.screenshot({ path: join(shots, `agent-embed-${kind}.png`) });
        }
        if (name === 'playground') {
          // The answer's retrieval trace, open, further down the page.
          await p.evaluate(() => document.querySelector('#latest details.trace[open]').scrollIntoView({ block: 'start' }));
          await p.screenshot({ path: join(shots, `playground-trace-${kind}.png`) });
        }
      }
      // The shown-once states: a new key's secret and a member's invitation link.
      await goto(p, W + '/settings/api-keys');
      await p.getByLabel('Name').fill(`Screenshot ${kind}`);
      await p.getByRole('button', { name: 'Create the key' }).click();
      await p.locator('#key-secret').waitFor();
      await screen(p, 'api-key-created', kind);
      await p.clean();
      await p.context().close();

      // What a helper sees: the workspace, and the 403 page.
      const h = await newPage({ viewport, bypassCSP: true, state: helperState });
      current = h;
      await goto(h, W);
      await heading(h, 'Inbox');
      await screen(h, 'workspace-home', kind);
      await goto(h, W + '/settings', 403);
      await screen(h, 'forbidden', kind);
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
} catch (e) {
  if (current && !current.isClosed()) {
    try { await current.screenshot({ path: join(shots, 'failure.png'), fullPage: true }); } catch { /* ignore */ }
    console.log(`failed on ${current.url()}\nbrowser console:\n  ` + current.watch.console.slice(-30).join('\n  '));
  }
  failed = true;
} finally {
  await browser.close();
}

console.log(`axe-core ${AXE_VERSION} (${AXE_TAGS.join(', ')}), ${audited.length} audits: ` + audited.join('; '));
console.log(`screenshots in ${shots}`);
console.log(`${passed} passed, ${failed ? 1 : 0} failed (${((Date.now() - started) / 1000).toFixed(1)} s)`);
process.exit(failed ? 1 : 0);
