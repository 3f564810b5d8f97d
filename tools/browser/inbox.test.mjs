// The inbox of issue 17, both sides at once in one Chromium: a visitor in
// the chat widget and members of the team in the console, each in a
// browser context of their own. Started by
// app/concierge/inbox_browser_test.go against real `concierge serve` pods
// and a worker, with:
//   INBOX_VISITOR_BASE   http://127.0.0.1:port of the pod the widget talks to
//   INBOX_MEMBER_BASE    the pod the members' console runs on (another one:
//                        every live step crosses pods)
//   INBOX_WORKSPACE      the Standard workspace (handoff)
//   INBOX_SLUG           its agent, with knowledge that answers INBOX_QUESTION
//                        with a text holding INBOX_ANSWER_TEXT
//   INBOX_EARLIER        another conversation of the workspace, whose thread
//                        the member keeps open in a second tab
//   INBOX_MEMBER_LINK, INBOX_MEMBER_EMAIL  an invitation (role agent)
//   INBOX_SECOND_LINK, INBOX_SECOND_EMAIL  another one, for the race
//   INBOX_RESULT         where to write what the Go test checks afterwards
//                        (JSON: session, note, reply, race, winner)
//   SCREENSHOT_DIR       where inbox-live-*.png go
//   CHROMIUM             the browser (default /usr/bin/chromium)
// Exits non-zero on the first failed check. The journeys run under the real
// CSP; the axe-core audits (WCAG 2.1 A and AA, zero violations) in contexts
// that bypass it, with the members' cookies.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { AXE_VERSION, DESKTOP, PHONE, dompurifyCSP, env, goto, heading, requireEnv, startRun } from './harness.mjs';

requireEnv(['INBOX_VISITOR_BASE', 'INBOX_MEMBER_BASE', 'INBOX_WORKSPACE', 'INBOX_SLUG', 'INBOX_EARLIER', 'INBOX_MEMBER_LINK', 'INBOX_MEMBER_EMAIL',
  'INBOX_SECOND_LINK', 'INBOX_SECOND_EMAIL', 'INBOX_QUESTION', 'INBOX_ANSWER_TEXT', 'INBOX_RESULT', 'SCREENSHOT_DIR']);
const visitorBase = env('INBOX_VISITOR_BASE');
const memberBase = env('INBOX_MEMBER_BASE');
const W = `/console/w/${env('INBOX_WORKSPACE')}`;
const slug = env('INBOX_SLUG');
const question = env('INBOX_QUESTION');
const answerText = env('INBOX_ANSWER_TEXT');
const shots = env('SCREENSHOT_DIR');
// The links name the configured public URL; the pods listen elsewhere.
const pathOf = (link) => new URL(link).pathname;
const MIA = { name: 'Mia Member', email: env('INBOX_MEMBER_EMAIL'), link: pathOf(env('INBOX_MEMBER_LINK')), password: 'a member with a long password' };
const NOAH = { name: 'Noah Owner', email: env('INBOX_SECOND_EMAIL'), link: pathOf(env('INBOX_SECOND_LINK')), password: 'another long password here' };
const REPLY = 'Hi Ada, Mia here: standard parcels take 3 to 5 business days.';
// Words that appear nowhere else, so finding them anywhere is a leak.
const NOTE = 'Internal only: Ada is a VIP-7731, refund without asking.';

const figures = {};
const result = {};

const run = await startRun({ shots });
const { step } = run;
// newPage opens a page on base (a pod), in a fresh context unless
// opts.context is given (harness.mjs). Both the widget's and the console's
// pages may meet DOMPurify's inert document (dompurifyCSP).
const newPage = (base, opts = {}) => run.newPage(base, { ignoreCSP: dompurifyCSP, ...opts });

// signIn makes a member out of an invitation (name and password set on its
// page), then signs in through the console's sign-in page in a fresh
// context, which it returns with the page on the inbox.
async function signIn(m) {
  const inv = await newPage(memberBase);
  run.current = inv;
  await goto(inv, m.link);
  await inv.getByLabel('Your name').fill(m.name);
  await inv.getByLabel('Password').fill(m.password);
  await inv.getByRole('button', { name: 'Accept the invitation' }).click();
  await inv.getByRole('button', { name: 'Sign out' }).waitFor();
  await inv.clean();
  await inv.context().close();

  const p = await newPage(memberBase);
  run.current = p;
  await p.goto(memberBase + W + '/inbox');
  await p.waitForURL(/\/console\/sign-in/);
  await p.getByLabel('Email').fill(m.email);
  await p.getByLabel('Password').fill(m.password);
  await p.getByRole('button', { name: 'Sign in' }).click();
  // Back where the sign-in page was asked for.
  await p.waitForURL(`${memberBase}${W}/inbox`);
  await heading(p, 'Inbox');
  await p.clean();
  return p;
}

// The widget.
async function openWidget(p) {
  await p.goto(visitorBase + '/chat/' + slug);
  await p.waitForFunction(() => window.conciergeWidget && window.conciergeWidget.ready === true);
}

const lastAssistant = (p) => p.locator('.cw-msg--assistant:not(.cw-welcome)').last();

// ask sends a question and waits for the whole answer (its rating buttons).
async function ask(p, text) {
  const before = await p.locator('.cw-msg--assistant:not(.cw-welcome)').count();
  await p.locator('#cw-input').fill(text);
  await p.locator('.cw-send').click();
  await p.waitForFunction((n) => {
    const all = document.querySelectorAll('.cw-msg--assistant:not(.cw-welcome)');
    return all.length > n && !all[all.length - 1].classList.contains('cw-streaming') && all[all.length - 1].querySelector('.cw-feedback');
  }, before, { timeout: 30_000 });
  return lastAssistant(p);
}

// requestPerson sends the widget's handoff form.
async function requestPerson(p, name, email) {
  if (!(await p.locator('.cw-handoff').isVisible())) await p.locator('.cw-footer .cw-link-button', { hasText: 'Talk to a person' }).click();
  await p.locator('#cw-handoff-name').fill(name);
  await p.locator('#cw-handoff-email').fill(email);
  await p.locator('.cw-handoff button[type=submit]').click();
  await p.locator('.cw-status', { hasText: 'Waiting for a person' }).waitFor();
  return p.evaluate(() => window.conciergeWidget.sessionId);
}

// send writes in a thread's composer as a reply or an internal note;
// clicking is called just before Send is clicked.
async function send(p, kind, text, clicking = () => {}) {
  await p.getByLabel(kind === 'note' ? 'Internal note (only members see it)' : 'Reply to the visitor').check();
  await p.getByLabel('Message', { exact: true }).fill(text);
  const button = p.getByRole('button', { name: 'Send', exact: true });
  await button.waitFor();
  clicking();
  await button.click();
}

// sessionStream reads the session's live stream (as the widget does),
// replayed from after its first message, for ms milliseconds, in the
// visitor's page; returns what it read.
async function sessionStream(p, sid, from, ms) {
  return p.evaluate(async ([sid, from, ms]) => {
    const stop = new AbortController();
    const res = await fetch(`/api/chat/${sid}/events`, { headers: { Accept: 'text/event-stream', 'Last-Event-ID': from }, signal: stop.signal });
    if (res.status !== 200) return `status ${res.status}: ${await res.text()}`;
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let text = '';
    const timer = setTimeout(() => stop.abort(), ms);
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        text += dec.decode(value, { stream: true });
      }
    } catch { /* aborted: read long enough */ }
    clearTimeout(timer);
    return text;
  }, [sid, from, ms]);
}

let mia;
let tab2;
let visitor;
let thread;
try {
  await step('members sign in through the console\'s sign-in page; Mia sets herself available', async () => {
    mia = await signIn(MIA);
    const toggle = mia.getByRole('switch', { name: 'Available to answer visitors' });
    assert.equal(await toggle.getAttribute('aria-checked'), 'false', 'a member starts away');
    await toggle.click();
    await mia.locator('#availability-state', { hasText: 'You are available.' }).waitFor();
    await mia.waitForURL(/\/inbox/);
    assert.equal(await mia.getByRole('switch', { name: 'Available to answer visitors' }).getAttribute('aria-checked'), 'true');
    await mia.clean();
  });

  await step('the visitor asks the agent a question in the widget', async () => {
    visitor = await newPage(visitorBase, { viewport: { width: 420, height: 720 } });
    run.current = visitor;
    await openWidget(visitor);
    const answer = await ask(visitor, question);
    await answer.locator('.cw-bubble', { hasText: answerText }).waitFor();
    await visitor.clean();
  });

  let sid;
  await step('the visitor asks for a person: Mia\'s open inbox shows it in "Needs a person" without a reload, and her other tab counts it in its title', async () => {
    run.current = mia;
    // Each page listens to the workspace stream before the visitor asks.
    const listening = (p) => p.waitForResponse((r) => r.url().includes('/inbox/events'));
    let live = listening(mia);
    await goto(mia, W + '/inbox?view=needs');
    await heading(mia, 'Inbox');
    await mia.locator('#inbox-list .empty').waitFor();
    await mia.locator('#inbox-live', { hasText: 'The inbox updates itself.' }).waitFor();
    // A second tab on another conversation's thread: news of other
    // conversations show in its title and the nav badge.
    tab2 = await newPage(memberBase, { context: mia.context() });
    live = Promise.all([live, listening(tab2)]);
    await goto(tab2, W + '/inbox/' + env('INBOX_EARLIER'));
    await heading(tab2, 'Conversation with Visitor');
    const title2 = await tab2.title();
    assert.doesNotMatch(title2, /^\(\d+\)/, 'no count before any news');
    let navigations = 0;
    mia.on('framenavigated', (f) => { if (f === mia.mainFrame()) navigations++; });
    for (const r of await live) assert.equal(r.status(), 200, 'the workspace stream');

    run.current = visitor;
    // The member is available: the form asks for no email.
    await visitor.locator('.cw-footer .cw-link-button', { hasText: 'Talk to a person' }).click();
    await visitor.locator('#cw-handoff-intro', { hasText: 'Leave your name and email so the team can follow up.' }).waitFor();
    assert.equal(await visitor.evaluate(() => window.conciergeWidget.humanAvailable), true, 'the widget knows a person is available');
    const t0 = Date.now();
    sid = await requestPerson(visitor, 'Ada Visitor', 'ada@example.com');
    result.session = sid;

    run.current = mia;
    const row = mia.locator('#inbox-list tbody tr', { has: mia.getByRole('link', { name: 'Ada Visitor' }) });
    await row.waitFor();
    figures.handoffToInbox = Date.now() - t0;
    await row.locator('.status', { hasText: 'Waiting for a person' }).waitFor();
    // The wait counts from the request, with its time in the tooltip.
    const waiting = row.locator('time', { hasText: /^waiting (just now|\d+ min)$/ });
    await waiting.waitFor();
    assert.match(await waiting.getAttribute('title'), /^Asked for a person at \d{4}-\d\d-\d\d \d\d:\d\d UTC$/, 'the request time in the tooltip');
    await row.locator('td', { hasText: 'Nobody' }).waitFor();
    await mia.locator('#inbox-tabs a', { hasText: 'Needs a person' }).locator('.count', { hasText: /^1$/ }).waitFor();
    assert.equal(navigations, 0, 'the inbox was not reloaded');
    await tab2.waitForFunction((t) => /^\(1\) /.test(document.title) && document.title.endsWith(t), title2);
    await tab2.locator('#inbox-badge', { hasText: /^1$/ }).waitFor();
    await mia.screenshot({ path: join(shots, 'inbox-live-needs-desktop.png') });
    await mia.clean();
    await tab2.clean();
  });

  await step('Mia takes over and replies: the widget shows her joining and her reply live', async () => {
    run.current = mia;
    await mia.getByRole('link', { name: 'Ada Visitor' }).click();
    await heading(mia, 'Conversation with Ada Visitor');
    thread = mia.url();
    // The header says when the visitor asked, and how long they have waited.
    await mia.locator('#thread-requested', { hasText: /^Asked for a person: \d{4}-\d\d-\d\d \d\d:\d\d UTC \(waiting (just now|\d+ min)\)$/ }).waitFor();
    await mia.getByRole('button', { name: 'Take over' }).click();
    await mia.getByText('You took this conversation over.').waitFor();
    await mia.locator('#thread-owner strong', { hasText: 'you' }).waitFor();
    run.current = visitor;
    await visitor.locator('.cw-status', { hasText: 'You are chatting with a person' }).waitFor();
    await visitor.locator('.cw-notice', { hasText: 'A person joined the conversation.' }).waitFor();

    run.current = mia;
    let t0 = 0;
    const posted = mia.waitForResponse((r) => r.url().endsWith('/messages') && r.request().method() === 'POST').then(() => { figures.replyPosted = Date.now() - t0; });
    await send(mia, 'reply', REPLY, () => { t0 = Date.now(); });
    await posted;
    await mia.getByText('Your reply was sent.').waitFor();
    run.current = visitor;
    const reply = visitor.locator('.cw-msg--human', { hasText: REPLY });
    await reply.waitFor();
    figures.replyToWidget = Date.now() - t0;
    await reply.locator('.cw-author', { hasText: 'Mia Member' }).waitFor();
    result.reply = REPLY;
    await mia.clean();
    await visitor.clean();
  });

  await step('Mia writes an internal note: in her thread, never in the widget, the poll or the session\'s stream', async () => {
    run.current = mia;
    await send(mia, 'note', NOTE);
    await mia.getByText('Your internal note was saved. The visitor does not see it.').waitFor();
    await mia.locator('#thread-transcript', { hasText: NOTE }).waitFor();
    result.note = NOTE;
    run.current = visitor;
    // A visitor's message after the note reaches the member live: the
    // stream the note would have used works, and the note is not on it.
    await visitor.locator('#cw-input').fill('Thanks, that is quick!');
    await visitor.locator('.cw-send').click();
    await mia.locator('#thread-transcript', { hasText: 'Thanks, that is quick!' }).waitFor();
    assert.equal(await visitor.getByText(NOTE).count(), 0, 'the widget shows the note');
    assert.ok(!(await visitor.content()).includes('VIP-7731'), 'the note is in the widget\'s page');
    // The session's poll (the widget's fallback): the reply, not the note.
    const poll = await visitor.evaluate(async (sid) => (await fetch(`/api/chat/${sid}/poll?limit=100`)).text(), sid);
    assert.ok(poll.includes(REPLY), `the poll has the reply: ${poll}`);
    assert.ok(!poll.includes('VIP-7731'), `the poll has the note: ${poll}`);
    // The session's live stream, replayed from after its first message.
    const first = JSON.parse(poll).messages[0].id;
    const stream = await sessionStream(visitor, sid, `${first}:1`, 2000);
    assert.ok(stream.includes(REPLY.slice(0, 20)), `the replayed stream has the reply: ${stream}`);
    assert.ok(stream.includes('Thanks, that is quick!'), `the replayed stream has the visitor's last message: ${stream}`);
    assert.ok(!stream.includes('VIP-7731'), `the replayed stream has the note: ${stream}`);
    // Reloaded, the widget restores the conversation: still no note.
    await visitor.reload();
    await visitor.waitForFunction(() => window.conciergeWidget && window.conciergeWidget.ready === true);
    await visitor.locator('.cw-msg--human', { hasText: REPLY }).waitFor();
    assert.equal(await visitor.getByText(NOTE).count(), 0, 'the restored widget shows the note');
    assert.ok(!(await visitor.content()).includes('VIP-7731'));
    await mia.clean();
    await visitor.clean();
  });

  await step('Mia resolves; the visitor asks again and the agent answers', async () => {
    run.current = mia;
    await mia.getByRole('button', { name: 'Resolve' }).click();
    await mia.getByText('The conversation is resolved.').waitFor();
    run.current = visitor;
    await visitor.locator('.cw-status', { hasText: 'This conversation is resolved.' }).waitFor();
    const answer = await ask(visitor, question);
    await answer.locator('.cw-bubble', { hasText: answerText }).waitFor();
    assert.equal(await visitor.getByText(NOTE).count(), 0);
    run.current = mia;
    // The thread follows live: the agent's answer shows up there too.
    await mia.locator('#thread-transcript', { hasText: answerText }).waitFor();
    await mia.clean();
    await visitor.clean();
  });

  await step('race: Mia and Noah press Take over on a fresh handoff at the same moment; one wins, the other is told who', async () => {
    const noah = await signIn(NOAH);
    const v2 = await newPage(visitorBase, { viewport: { width: 420, height: 720 } });
    run.current = v2;
    await openWidget(v2);
    await ask(v2, 'Can I return an unused item?');
    const race = await requestPerson(v2, 'Bea Racer', 'bea@example.com');
    result.race = race;
    for (const p of [mia, noah]) {
      run.current = p;
      await goto(p, W + '/inbox/' + race);
      await heading(p, 'Conversation with Bea Racer');
    }
    const buttons = [mia, noah].map((p) => p.getByRole('button', { name: 'Take over' }));
    await Promise.all(buttons.map((b) => b.waitFor()));
    const posts = [mia, noah].map((p) => p.waitForResponse((r) => r.url().endsWith('/take-over') && r.request().method() === 'POST'));
    await Promise.all(buttons.map((b) => b.click()));
    const statuses = (await Promise.all(posts)).map((r) => r.status());
    assert.deepEqual([...statuses].sort(), [303, 409], `take-over answers ${statuses}`);
    const [winner, loser, winnerName] = statuses[0] === 303 ? [mia, noah, MIA.name] : [noah, mia, NOAH.name];
    await winner.getByText('You took this conversation over.').waitFor();
    await loser.locator('.error', { hasText: `${winnerName} took this conversation over.` }).waitFor();
    await loser.locator('#thread-owner strong', { hasText: winnerName }).waitFor();
    result.winner = winnerName;
    // The visitor sees one person joining.
    run.current = v2;
    await v2.locator('.cw-status', { hasText: 'You are chatting with a person' }).waitFor();
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(await v2.locator('.cw-notice', { hasText: 'A person joined the conversation.' }).count(), 1, 'one joining notice');
    await winner.clean();
    await loser.clean();
    await v2.clean();
    await v2.context().close();
    await noah.context().close();
  });

  for (const [kind, viewport] of [['desktop', DESKTOP], ['phone', PHONE]]) {
    await step(`axe ${AXE_VERSION} and screenshots, ${kind}: the inbox and the thread with its reply and note`, async () => {
      const state = await mia.context().storageState();
      const p = await newPage(memberBase, { viewport, bypassCSP: true, state });
      run.current = p;
      await goto(p, W + '/inbox?view=open');
      await heading(p, 'Inbox');
      await p.getByRole('link', { name: 'Bea Racer' }).waitFor();
      await run.screen(p, 'inbox', kind, { file: 'inbox-live-inbox' });
      await p.goto(thread);
      await heading(p, 'Conversation with Ada Visitor');
      await p.locator('#thread-transcript', { hasText: NOTE }).waitFor();
      await run.screen(p, 'thread', kind, { file: 'inbox-live-thread', fullPage: true });
      await p.clean();
      await p.context().close();
    });
  }
  await visitor.screenshot({ path: join(shots, 'inbox-live-widget.png') });
  writeFileSync(env('INBOX_RESULT'), JSON.stringify(result));
} catch {
  await run.reportFailure('inbox-failure.png');
} finally {
  await run.browser.close();
}

if (figures.handoffToInbox !== undefined) console.log(`handoff form submitted -> row in the member's open inbox (another pod): ${figures.handoffToInbox} ms`);
if (figures.replyToWidget !== undefined) console.log(`Send clicked -> reply shown in the widget (another pod): ${figures.replyToWidget} ms (the form's POST answered after ${figures.replyPosted} ms)`);
run.finish();
