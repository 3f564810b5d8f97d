// What the browser scripts (console, inbox, widget) share: launching
// Debian's chromium, pages that watch for page errors, dialogs, CSP
// violations and requests leaving the service, numbered steps, the
// axe-core audit (WCAG 2.1 A and AA: zero violations), the 375 px
// side-scroll check, screenshots, and the summary and exit code the Go
// tests read. Each script keeps its own journeys; this file holds only
// what the three wrote the same way.
import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import assert from 'node:assert/strict';

export const env = (k, d) => process.env[k] ?? d;

// requireEnv exits with status 2 (a broken setup, not a failed check)
// when any of the variables is unset or empty.
export function requireEnv(names) {
  for (const k of names) {
    if (!process.env[k]) { console.error(`${k} is not set`); process.exit(2); }
  }
}

const require = createRequire(import.meta.url);
export const AXE_PATH = require.resolve('axe-core/axe.min.js');
export const AXE_VERSION = require('axe-core/package.json').version;
export const AXE_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];
export const DESKTOP = { width: 1024, height: 720 };
export const PHONE = { width: 375, height: 667 };

// describe says what an axe result is about: the rule, its impact, its
// help page and the elements, with why each fails.
export const describe = (v) => `${v.id} [${v.impact}] ${v.help}\n    ${v.helpUrl}\n` +
  v.nodes.map((n) => `    - ${n.target}\n      ${n.why.replace(/\n/g, '\n      ')}`).join('\n');

// dompurifyCSP is a CSP report the widget's DOMPurify causes: it parses
// hostile markup in an inert document that inherits the page's CSP, which
// reports (and blocks) the inline handler it contains before DOMPurify
// removes it: a second layer, not a violation of ours. Pages showing the
// widget pass it as newPage's ignoreCSP.
export const dompurifyCSP = (v) => v.directive === 'script-src-attr' && /\/vendor\/dompurify\//.test(v.source);

// startRun launches the browser and makes the screenshot directory; the
// run it returns counts the steps and audits and ends the script with
// finish(). A page or the browser that hangs is bounded by the timeouts
// here and, for the whole script, by the Go test (browserKit.run).
export async function startRun({ shots }) {
  mkdirSync(shots, { recursive: true });
  const started = Date.now();
  const browser = await chromium.launch({
    executablePath: env('CHROMIUM', '/usr/bin/chromium'),
    headless: true,
    // playwright gives every launch a fresh temporary --user-data-dir itself.
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    timeout: 30_000,
  });

  const run = {
    browser,
    shots,
    passed: 0,
    failed: false,
    // audited lists every audit's outcome for the summary.
    audited: [],
    // current is the page whose screenshot is taken when a step fails.
    current: undefined,

    // newPage opens a page on base, in a fresh context (own cookies and
    // storage) unless opts.context is given, with the checks every page
    // gets: page errors, CSP violations, dialogs, requests that leave the
    // service (all in page.watch; page.clean() asserts them). opts:
    // viewport (DESKTOP), scale (deviceScaleFactor), state (a signed-in
    // context's cookies), bypassCSP (for the axe audits only: the pages'
    // script-src would block the injected axe-core; every other step runs
    // under the real CSP), ignoreCSP (a predicate for CSP reports that are
    // not violations of ours) and offline (the words of the assertion on
    // requests outside the service).
    async newPage(base, opts = {}) {
      const context = opts.context || await browser.newContext({
        viewport: opts.viewport || DESKTOP, deviceScaleFactor: opts.scale || 1, bypassCSP: !!opts.bypassCSP, storageState: opts.state,
      });
      const page = await context.newPage();
      // Hang guards, not measures: on a loaded two-core CI machine a page
      // as heavy as the queue monitor took over 10 s to load.
      page.setDefaultTimeout(15_000);
      page.setDefaultNavigationTimeout(30_000);
      const watch = { errors: [], dialogs: [], foreign: [], console: [], requests: [] };
      page.on('pageerror', (e) => watch.errors.push(String(e)));
      page.on('console', (m) => watch.console.push(`${m.type()}: ${m.text()}`));
      page.on('dialog', async (d) => { watch.dialogs.push(d.message()); await d.dismiss(); });
      page.on('request', (r) => {
        watch.requests.push(r);
        if (!r.url().startsWith(base) && !r.url().startsWith('data:')) watch.foreign.push(r.url());
      });
      await page.addInitScript(() => {
        window.__csp = [];
        document.addEventListener('securitypolicyviolation', (e) => window.__csp.push({ directive: e.violatedDirective, blocked: e.blockedURI, source: e.sourceFile }));
      });
      page.base = base;
      page.watch = watch;
      page.clean = async () => {
        assert.deepEqual(watch.errors, [], 'page errors');
        assert.deepEqual(watch.dialogs, [], 'dialogs fired');
        assert.deepEqual(watch.foreign, [], opts.offline || 'requests outside the service');
        if (opts.bypassCSP) return; // no CSP to violate in an audit context
        const ignore = opts.ignoreCSP || (() => false);
        const csp = (await page.evaluate(() => window.__csp)).filter((v) => !ignore(v));
        assert.deepEqual(csp, [], 'CSP violations');
      };
      return page;
    },

    // step runs one numbered check and prints its outcome; the first
    // failure stops the script (the caller's catch reports it).
    async step(name, fn) {
      const t0 = Date.now();
      try {
        await fn();
        run.passed++;
        console.log(`ok   ${name} (${Date.now() - t0} ms)`);
      } catch (e) {
        console.log(`FAIL ${name}: ${e && e.stack || e}`);
        run.failed = true;
        throw e;
      }
    },

    // audit runs axe-core on the page as it is. Any violation of a WCAG 2.1
    // A or AA rule (AXE_TAGS) fails, listing each rule, its impact, the
    // elements and the rule's help page. axe's best-practice rules run too
    // and are printed, not failed; with review, so are the results axe
    // leaves for review (it could not decide, e.g. text over an image).
    // thirdParty names the rules a page we mount but do not build (the
    // queue monitor, asynqmon) is known to break: those are printed, not
    // failed, and any other rule still fails, so the page cannot get worse
    // unnoticed.
    async audit(p, state, { review = false, thirdParty = [] } = {}) {
      const t0 = Date.now();
      if (!(await p.evaluate(() => !!window.axe))) await p.addScriptTag({ path: AXE_PATH });
      const r = await p.evaluate(async ({ tags, review }) => {
        const res = await window.axe.run(document, { runOnly: { type: 'tag', values: [...tags, 'best-practice'] }, resultTypes: review ? ['violations', 'incomplete'] : ['violations'] });
        const wcag = (v) => v.tags.some((t) => tags.includes(t));
        const brief = (v) => ({ id: v.id, impact: v.impact, help: v.help, helpUrl: v.helpUrl, wcag: wcag(v), nodes: v.nodes.map((n) => ({ target: n.target.join(' '), why: n.failureSummary || '' })) });
        return { passes: res.passes.filter(wcag).length, violations: res.violations.map(brief), incomplete: review ? res.incomplete.map(brief) : [] };
      }, { tags: AXE_TAGS, review });
      for (const v of r.violations.filter((x) => x.wcag && thirdParty.includes(x.id))) console.log(`     axe "${state}": known in the third-party page (not failed): ${v.id} ${v.nodes.map((n) => n.target).join(', ')}`);
      const failing = r.violations.filter((v) => v.wcag && !thirdParty.includes(v.id));
      for (const v of r.violations.filter((x) => !x.wcag)) console.log(`     axe "${state}": best practice (not failed): ${v.id} ${v.nodes.map((n) => n.target).join(', ')}`);
      for (const v of r.incomplete) console.log(`     axe "${state}": needs review (not failed): ${describe(v)}`);
      run.audited.push(`${state}: ${failing.length} violations (${r.passes} rules passed, ${Date.now() - t0} ms)`);
      if (failing.length) {
        assert.fail(`axe-core ${AXE_VERSION} (${AXE_TAGS.join(', ')}): ${failing.length} violation(s) in "${state}":\n${failing.map(describe).join('\n')}`);
      }
    },

    // screen audits the page at its current viewport ("desktop" or
    // "phone"), for a phone checks that nothing scrolls sideways, then
    // takes the screenshot <file>-<kind>.png (file defaults to name).
    async screen(p, name, kind, { file = name, fullPage = false, thirdParty = [] } = {}) {
      await noSideScroll(p, name, kind);
      await run.audit(p, `${name}, ${kind}`, { thirdParty });
      await p.screenshot({ path: join(shots, `${file}-${kind}.png`), fullPage });
    },

    // reportFailure keeps what a failed step leaves to look at: a full
    // screenshot of the current page, its URL and its browser console.
    async reportFailure(file = 'failure.png') {
      const p = run.current;
      if (p && !p.isClosed()) {
        try { await p.screenshot({ path: join(shots, file), fullPage: true }); } catch { /* ignore */ }
        console.log(`failed on ${p.url()}\nbrowser console:\n  ` + p.watch.console.slice(-30).join('\n  '));
      }
      run.failed = true;
    },

    // finish prints the audits, where the screenshots are and the count
    // of steps (the Go test logs them), and exits non-zero on a failure.
    finish() {
      console.log(`axe-core ${AXE_VERSION} (${AXE_TAGS.join(', ')}), ${run.audited.length} audits: ` + run.audited.join('; '));
      console.log(`screenshots in ${shots}`);
      console.log(`${run.passed} passed, ${run.failed ? 1 : 0} failed (${((Date.now() - started) / 1000).toFixed(1)} s)`);
      process.exit(run.failed ? 1 : 0);
    },
  };
  return run;
}

// heading waits for the page's h1 (every console page has exactly one).
export async function heading(p, text) {
  await p.locator('main h1', { hasText: text }).waitFor();
}

// goto opens a path on the page's base and checks the status the browser
// got.
export async function goto(p, path, status = 200) {
  const res = await p.goto(p.base + path);
  assert.equal(res.status(), status, `GET ${path}`);
  return res;
}

// noSideScroll checks that a page fits a 375 px phone ("phone" kind)
// without scrolling sideways, naming the outermost elements that stick
// out, to say what to fix.
export async function noSideScroll(p, name, kind) {
  if (kind !== 'phone') return;
  const d = await p.evaluate(() => ({
    sw: document.documentElement.scrollWidth, w: window.innerWidth,
    wide: [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && !(e.parentElement && e.parentElement.getBoundingClientRect().right > window.innerWidth + 1))
      .slice(0, 5).map((e) => `${e.tagName.toLowerCase()}${e.id ? '#' + e.id : ''}${e.className ? '.' + String(e.className).split(' ').join('.') : ''} (${Math.round(e.getBoundingClientRect().right)} px)`),
  }));
  assert.ok(d.sw <= d.w, `${name}: horizontal scroll at 375 px (${d.sw} > ${d.w}): ${d.wide.join(', ')}`);
}
