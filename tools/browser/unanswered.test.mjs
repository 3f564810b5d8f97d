// Issue 18's "improve an answer" loop in a real browser. Started by
// app/concierge/unanswered_browser_test.go against a real `concierge serve`
// pod and a worker, with:
//   UNANSWERED_BASE       http://127.0.0.1:port of the pod
//   UNANSWERED_WORKSPACE  the workspace; its agent UNANSWERED_SLUG fell back
//                         on UNANSWERED_QUESTION, which the worker grouped
//                         into a topic before the script starts
//   UNANSWERED_OWNER_LINK, UNANSWERED_OWNER_EMAIL  an owner's invitation
//   UNANSWERED_ANSWER     the answer the owner writes
//   SCREENSHOT_DIR        where unanswered-*.png go
// The owner opens Unanswered, the agent's topics and the topic, writes the
// answer, sees the topic addressed, then asks the question in the
// playground until the agent answers it from the new source (indexing
// takes seconds). The list and the topic page are audited with axe-core
// (WCAG 2.1 A and AA, zero violations) and photographed at 1024 and 375 px.
import assert from 'node:assert/strict';
import { DESKTOP, PHONE, env, goto, heading, requireEnv, startRun } from './harness.mjs';

requireEnv(['UNANSWERED_BASE', 'UNANSWERED_WORKSPACE', 'UNANSWERED_SLUG', 'UNANSWERED_QUESTION', 'UNANSWERED_OWNER_LINK',
  'UNANSWERED_OWNER_EMAIL', 'UNANSWERED_ANSWER', 'SCREENSHOT_DIR']);
const base = env('UNANSWERED_BASE');
const W = `/console/w/${env('UNANSWERED_WORKSPACE')}`;
const slug = env('UNANSWERED_SLUG');
const question = env('UNANSWERED_QUESTION');
const answer = env('UNANSWERED_ANSWER');
const OWNER = { name: 'Olga Owner', email: env('UNANSWERED_OWNER_EMAIL'), link: new URL(env('UNANSWERED_OWNER_LINK')).pathname, password: 'an owner with a long password' };

const run = await startRun({ shots: env('SCREENSHOT_DIR') });
const { step } = run;
let owner;
let topicURL;

try {
  await step('1. the owner accepts the invitation and signs in', async () => {
    owner = await run.newPage(base);
    run.current = owner;
    await goto(owner, OWNER.link);
    await owner.getByLabel('Your name').fill(OWNER.name);
    await owner.getByLabel('Password').fill(OWNER.password);
    await owner.getByRole('button', { name: 'Accept the invitation' }).click();
    await owner.getByRole('button', { name: 'Sign out' }).waitFor();
    await owner.clean();
  });

  await step('2. Unanswered in the navigation, the agent, its topic with the question and its reason', async () => {
    await goto(owner, W + '/');
    await owner.getByRole('link', { name: 'Unanswered', exact: true }).click();
    await heading(owner, 'Unanswered questions');
    await owner.getByRole('link', { name: 'Acme Support' }).click();
    await heading(owner, 'Unanswered questions: Acme Support');
    const row = owner.locator('tbody tr', { hasText: question });
    await row.waitFor();
    assert.match(await row.textContent(), /no answer 1/);
    assert.match(await row.textContent(), /Open/);
    await row.getByRole('link', { name: question }).click();
    await heading(owner, 'Unanswered topic');
    topicURL = new URL(owner.url()).pathname;
    // The example links its conversation; the form is prefilled.
    await owner.locator('section', { hasText: 'Example questions' }).getByRole('link', { name: question }).waitFor();
    assert.equal(await owner.locator('#f-question').inputValue(), question);
    await owner.clean();
  });

  for (const [kind, viewport] of [['desktop', DESKTOP], ['phone', PHONE]]) {
    await step(`3. axe and screenshots, ${kind}: the topic list and an open topic`, async () => {
      const state = await owner.context().storageState();
      const p = await run.newPage(base, { viewport, bypassCSP: true, state });
      run.current = p;
      await goto(p, `${W}/agents/${slug}/unanswered`);
      await heading(p, 'Unanswered questions: Acme Support');
      await run.screen(p, 'unanswered list', kind, { file: 'unanswered-list' });
      await goto(p, topicURL);
      await heading(p, 'Unanswered topic');
      await run.screen(p, 'unanswered topic', kind, { file: 'unanswered-topic', fullPage: true });
      await p.clean();
      await p.context().close();
    });
  }

  await step('4. refused without an answer, then the answer is written and the topic is addressed', async () => {
    await owner.getByRole('button', { name: 'Add the answer to the knowledge' }).click();
    await owner.locator('#f-answer-error', { hasText: 'is required' }).waitFor();
    await owner.locator('#f-answer').fill(answer);
    await owner.getByRole('button', { name: 'Add the answer to the knowledge' }).click();
    await owner.locator('.notice', { hasText: 'The answer is added to the knowledge and the topic is addressed.' }).waitFor();
    await owner.locator('dd', { hasText: 'Addressed' }).waitFor();
    await owner.clean();
  });

  for (const [kind, viewport] of [['desktop', DESKTOP], ['phone', PHONE]]) {
    await step(`5. axe and screenshot, ${kind}: the addressed topic`, async () => {
      const state = await owner.context().storageState();
      const p = await run.newPage(base, { viewport, bypassCSP: true, state });
      run.current = p;
      await goto(p, topicURL);
      await p.locator('dd', { hasText: 'Addressed' }).waitFor();
      await run.screen(p, 'addressed topic', kind, { file: 'unanswered-addressed', fullPage: true });
      await p.clean();
      await p.context().close();
    });
  }

  await step('6. the same question in the playground is answered from the new source', async () => {
    const deadline = Date.now() + 45_000;
    for (;;) {
      await goto(owner, W + '/playground');
      await heading(owner, 'Playground');
      await owner.getByLabel('Agent').selectOption(slug);
      await owner.getByLabel('Your question').fill(question);
      await owner.getByRole('button', { name: 'Ask' }).click();
      await owner.waitForURL(/\/playground\?session=ses_/);
      await owner.locator('[data-play-status]', { hasText: 'Answered.' }).waitFor({ timeout: 30_000 });
      const latest = owner.locator('#latest');
      const text = await latest.locator('.msg-text').textContent();
      if (text.includes('3 euros')) {
        await latest.locator('.msg-citations', { hasText: question }).waitFor();
        break;
      }
      // The source is still being indexed: ask again.
      assert.ok(Date.now() < deadline, `still not answered from the new source after 45 s: ${text}`);
      await new Promise((r) => setTimeout(r, 1000));
    }
    await owner.clean();
  });
} catch {
  await run.reportFailure('unanswered-failure.png');
} finally {
  await run.browser.close();
}
run.finish();
