// The Reports page (issue 18) in a real browser, driving Debian's chromium
// with playwright-core. Started by app/concierge/reports_browser_test.go
// against real `concierge serve` and `worker` processes, after three
// conversations of the agent "support" (one handed to people) were rolled
// up, with:
//   REPORTS_BASE        http://127.0.0.1:port of a pod
//   REPORTS_WORKSPACE   the workspace id
//   REPORTS_OWNER_LINK  a one-time owner invitation made by the operator
//   SCREENSHOT_DIR      where the screenshots go (reports-desktop.png, ...)
//   CHROMIUM            the browser (default /usr/bin/chromium)
// Exits non-zero on the first failed check. The journey runs under the
// real CSP (the charts' script included); the axe-core audits (WCAG 2.1 A
// and AA: zero violations) at 1024 and 375 px run in contexts that bypass
// it so axe-core can be injected.
import assert from 'node:assert/strict';
import { AXE_VERSION, DESKTOP, PHONE, env, goto, heading, requireEnv, startRun } from './harness.mjs';

requireEnv(['REPORTS_BASE', 'REPORTS_WORKSPACE', 'REPORTS_OWNER_LINK', 'SCREENSHOT_DIR']);
const base = env('REPORTS_BASE');
const W = `/console/w/${env('REPORTS_WORKSPACE')}`;
const ownerLink = new URL(env('REPORTS_OWNER_LINK')).pathname;

const run = await startRun({ shots: env('SCREENSHOT_DIR') });
const { step } = run;
const newPage = (opts) => run.newPage(base, opts);

// count reads a figure's linked number in the figures table.
// A figure's row, by its row header's exact text: a substring would also
// match the column header "Share of conversations".
const count = (p, label) => p.locator('table.report tbody tr', { has: p.getByRole('rowheader', { name: label, exact: true }) }).first().locator('td.num a').first();

let state;
let filtered;
try {
  const p = await newPage();
  run.current = p;

  await step('1. an invited owner signs up and opens Reports from the navigation', async () => {
    await goto(p, ownerLink);
    await p.getByLabel('Your name').fill('Olivia Owner');
    await p.getByLabel('Password').fill('correct horse battery staple');
    await p.getByRole('button', { name: 'Accept the invitation' }).click();
    await p.waitForURL(`${base}${W}/agents`);
    await p.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Reports' }).click();
    await p.waitForURL(`${base}${W}/reports`);
    await heading(p, 'Reports');
    state = await p.context().storageState();
  });

  await step('2. the figures count the three conversations, and the charts are drawn under the CSP', async () => {
    assert.match(await count(p, 'Conversations').innerText(), /^3\b/);
    assert.match(await count(p, 'Handed to people').innerText(), /^1\b/);
    for (const chart of ['.chart-outcomes', '.chart-fallback']) {
      const canvas = p.locator(`${chart} canvas`).first();
      await canvas.waitFor();
      assert.ok((await canvas.getAttribute('aria-label')).length > 10, `${chart}: the canvas has no aria-label`);
    }
    await p.clean();
  });

  await step('3. the plain GET form narrows the report to one agent and today', async () => {
    await p.getByLabel('Agent').selectOption('support');
    await p.getByLabel('Range').selectOption('today');
    await p.getByRole('button', { name: 'Show the report' }).click();
    await p.waitForURL(/\/reports\?agent=support&preset=today/);
    assert.match(await count(p, 'Conversations').innerText(), /^3\b/);
  });

  await step('4. the CSV download is the same report, a row for today and a total', async () => {
    const href = await p.getByRole('link', { name: 'Download as CSV' }).getAttribute('href');
    const res = await p.request.get(base + href);
    assert.equal(res.status(), 200);
    assert.match(res.headers()['content-type'], /^text\/csv/);
    const lines = (await res.text()).trim().split('\n');
    assert.equal(lines.length, 3, lines.join('\n'));
    assert.match(lines[0], /^day,agent,conversations,messages,/);
    assert.match(lines[2], /^total,support,3,/);
  });

  await step('5. a number links to exactly its conversations: the handed-off one', async () => {
    await count(p, 'Handed to people').click();
    await p.waitForURL(/\/conversations\?.*handedOff=true/);
    await p.getByText(/Filtered by report: started .* handed to people\./).waitFor();
    assert.equal(await p.locator('main table tbody tr').count(), 1);
    filtered = new URL(p.url()).pathname + new URL(p.url()).search;
    await p.getByRole('link', { name: 'Clear the report filter' }).click();
    await heading(p, 'Conversations');
    assert.equal(await p.getByText('Filtered by report').count(), 0);
    await p.clean();
  });

  for (const [kind, viewport] of [['desktop', DESKTOP], ['phone', PHONE]]) {
    await step(`axe ${AXE_VERSION} and screenshots, ${kind} (${viewport.width} px): the report and a filtered list`, async () => {
      const a = await newPage({ viewport, bypassCSP: true, state });
      run.current = a;
      await goto(a, `${W}/reports?agent=support&preset=last_7_days`);
      await heading(a, 'Reports');
      await a.locator('.chart-outcomes canvas').first().waitFor();
      await run.screen(a, 'reports', kind, { fullPage: true });
      await goto(a, filtered);
      await heading(a, 'Conversations');
      await run.screen(a, 'reports-filtered', kind);
      await a.clean();
      await a.context().close();
    });
  }
} catch {
  await run.reportFailure('failure.png');
} finally {
  await run.browser.close();
}

run.finish();
