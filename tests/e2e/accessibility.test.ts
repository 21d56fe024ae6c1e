/**
 * Accessibility end to end, in a real browser (Debian's chromium driven by playwright-core) against
 * the built site served by `npm start`'s server with the real runner and broker:
 *  - axe-core over every page (the overview, every lesson, /labs/, the glossary and the
 *    instructor's class view), every rule in the dark theme and the rules that judge colours again
 *    in the light one, and over a lesson's workbench with a grade's report open in both: no
 *    serious or critical violation. The counts per page are printed.
 *  - the workbench by keyboard: Tab enters and leaves the editor (tab-focus mode, its shortcut
 *    shown), skip links lead to the lab and its terminal, focus comes back to the Run, Stop and
 *    Grade buttons, the verdict is announced in a live region, and after a failed grade the hint
 *    for the failed check is shown in view.
 *  - at phone width the workbench mounts without JavaScript errors.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_DIR } from '../../lab-server/core/paths.ts';
import { launchBrowser } from '../support/browser.ts';
import { startCourseServer, type CourseServer } from '../support/course-server.ts';
import { brokenProgram } from '../support/broken-program.ts';
import { testBrokers } from '../support/brokers.ts';

const requireHere = createRequire(import.meta.url);
const AXE_SOURCE = fs.readFileSync(requireHere.resolve('axe-core/axe.min.js'), 'utf8');
const AXE_VERSION = (JSON.parse(fs.readFileSync(requireHere.resolve('axe-core/package.json'), 'utf8')) as { version: string }).version;
const INSTRUCTOR_TOKEN = 'a11y-audit-instructor-token-0123456789';
const LESSON = '/10-1/04-single-stage/';
const LAB_ID = 'single-stage';
const SHOTS = path.join(ROOT_DIR, 'test-results');
const lab = (page: Page) => page.locator(`kiq-lab[data-lab-id="${LAB_ID}"]`);

let server: CourseServer;
let baseUrl = '';
let browser: Awaited<ReturnType<typeof launchBrowser>>;

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[]; failureSummary?: string }[];
}

/**
 * axe-core's violations on the page as it is now, and which of the rules it ran judge colours (axe's
 * `cat.color`: contrast, links told apart from text by colour alone). `rules` runs only those: a
 * page switched to its other theme is the same DOM in other colours, so only they can judge it
 * differently.
 */
async function audit(page: Page, rules?: string[]): Promise<{ violations: Violation[]; colourRules: string[] }> {
  // The site's Content-Security-Policy refuses inline scripts (so addScriptTag cannot inject axe);
  // an evaluation from the test driver is not a page script and is not subject to it.
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(`${AXE_SOURCE}\n;void 0`);
  return page.evaluate(async (only) => {
    const axe = (window as unknown as {
      axe: {
        run(context: Document, options: object): Promise<Record<'violations' | 'passes' | 'incomplete' | 'inapplicable', Violation[]>>;
        getRules(tags: string[]): { ruleId: string }[];
      };
    }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'], ...(only ? { runOnly: { type: 'rule', values: only } } : {}) });
    const ran = new Set([...result.violations, ...result.passes, ...result.incomplete, ...result.inapplicable].map((r) => r.id));
    return {
      violations: result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target, failureSummary: n.failureSummary })) })),
      colourRules: axe.getRules(['cat.color']).map((r) => r.ruleId).filter((id) => ran.has(id)),
    };
  }, rules ?? null);
}

const SEVERE = new Set(['serious', 'critical']);

/** One line per page: its violations by impact, and the serious/critical ones spelled out. */
function describeViolations(where: string, violations: Violation[]): { severe: number; line: string; details: string[] } {
  const byImpact: Record<string, number> = {};
  for (const v of violations) byImpact[v.impact ?? 'none'] = (byImpact[v.impact ?? 'none'] ?? 0) + 1;
  const severe = violations.filter((v) => SEVERE.has(v.impact ?? ''));
  const details = severe.map((v) => `  ${where}: ${v.impact} ${v.id} (${v.help}) x${v.nodes.length}: ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(' | ')}\n    ${v.nodes[0]?.failureSummary?.replace(/\n/g, ' ') ?? ''}`);
  const counts = ['critical', 'serious', 'moderate', 'minor'].map((i) => `${i} ${byImpact[i] ?? 0}`).join(', ');
  return { severe: severe.length, line: `${where}: ${counts}`, details };
}

/** Switches the loaded page's theme in place, as Starlight's theme picker does, and waits for a repaint. */
async function switchTheme(page: Page, theme: 'light' | 'dark') {
  await setTheme(page, theme);
  await page.evaluate(async (t) => {
    document.documentElement.dataset.theme = t;
    await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  }, theme);
  expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe(theme);
}

async function setTheme(page: Page, theme: 'light' | 'dark') {
  await page.emulateMedia({ colorScheme: theme });
  await page.evaluate((t) => localStorage.setItem('starlight-theme', t), theme);
}

async function openLab(page: Page, code?: string): Promise<void> {
  await page.goto(`${baseUrl}/`);
  await page.evaluate(
    ({ id, text }) => {
      localStorage.removeItem(`kafkaiq:client:${id}`);
      if (text === null) localStorage.removeItem(`kafkaiq:code:${id}`);
      else localStorage.setItem(`kafkaiq:code:${id}`, text);
    },
    { id: LAB_ID, text: code ?? null },
  );
  await page.goto(`${baseUrl}${LESSON}`);
  await lab(page).scrollIntoViewIfNeeded();
  await lab(page).locator('.monaco-editor').waitFor({ timeout: 60_000 });
  await lab(page).locator('.xterm-rows').waitFor({ timeout: 30_000 });
  await expect.poll(() => lab(page).getByRole('button', { name: 'Grade', exact: true }).isEnabled(), { timeout: 30_000 }).toBe(true);
}

/** Which element has focus: its tag, class and accessible text, for assertions and messages. */
function focused(page: Page): Promise<{ tag: string; cls: string; text: string; inEditor: boolean; inTerminal: boolean }> {
  return page.evaluate(() => {
    let el = document.activeElement as HTMLElement | null;
    while (el?.shadowRoot?.activeElement) el = el.shadowRoot.activeElement as HTMLElement;
    return {
      tag: el?.tagName.toLowerCase() ?? '',
      cls: typeof el?.className === 'string' ? el.className : '',
      text: (el?.getAttribute('aria-label') ?? el?.textContent ?? '').trim().slice(0, 80),
      inEditor: !!el?.closest('.monaco-editor'),
      inTerminal: !!el?.closest('.xterm'),
    };
  });
}

beforeAll(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  server = await startCourseServer(testBrokers(), 'start', { env: { KAFKAIQ_INSTRUCTOR_TOKEN: INSTRUCTOR_TOKEN } });
  baseUrl = server.url;
  browser = await launchBrowser({ viewport: { width: 1400, height: 900 } });
}, 420_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/** A program that reads forever and prints as it goes: Run keeps running it until Stop. */
const SOLUTION = fs.readFileSync(path.join(ROOT_DIR, 'labs/single-stage/solution.ts'), 'utf8');
const BROKEN = brokenProgram('single-stage', 'offsets-after-commit');

/** Progress and Predict answers, so the sidebar's badges (the current lesson's too) are audited. */
async function seedProgress(page: Page) {
  await page.evaluate(() => {
    const at = new Date().toISOString();
    localStorage.setItem('kafkaiq:progress', JSON.stringify({ passed: { 'single-stage': at, copy: at, 'multi-stage': at } }));
    localStorage.setItem('kafkaiq:predict', JSON.stringify({ lessons: { '10-1/04-single-stage': { a: { correct: true } }, '10-1/05-multi-stage': { a: { correct: false } } } }));
  });
}

const button = (page: Page, name: string) => lab(page).getByRole('button', { name, exact: true });

describe('accessibility', () => {
  const summary: string[] = [];
  const failures: string[] = [];
  /** Audits the page, keeps its line for the summary, and returns its serious/critical violations. */
  const record = async (page: Page, where: string, rules?: string[]): Promise<{ severe: string[]; colourRules: string[] }> => {
    const { violations, colourRules } = await audit(page, rules);
    fs.mkdirSync(path.join(SHOTS, 'axe'), { recursive: true });
    fs.writeFileSync(path.join(SHOTS, 'axe', `${where.replace(/[^a-z0-9]+/gi, '_')}.json`), JSON.stringify(violations, null, 2));
    const { line, details } = describeViolations(where, violations);
    summary.push(line);
    failures.push(...details);
    return { severe: details, colourRules };
  };

  afterAll(() => {
    console.log(`axe-core ${AXE_VERSION} violations (rules) per page:\n${summary.join('\n')}\n${failures.join('\n')}`);
  });

  it('grades by keyboard: focus back on the button, the verdict announced, the hint for the failed check in view; no serious axe violation with the report open', async () => {
    const page = await browser.newPage();
    await openLab(page, BROKEN);
    // Quick grade from the keyboard: while it runs the focus waits on Stop, then comes back.
    await button(page, 'Quick grade').focus();
    await page.keyboard.press('Enter');
    await expect.poll(async () => (await focused(page)).text, { timeout: 10_000 }).toBe('Stop');
    const verdict = lab(page).locator('.kiq-wb-report .kiq-wb-verdict');
    await verdict.waitFor({ state: 'visible', timeout: 170_000 });
    expect(await verdict.getAttribute('data-verdict')).toBe('fail');
    await expect.poll(async () => (await focused(page)).text, { timeout: 10_000 }).toBe('Quick grade');
    // The live region says the verdict and the failed checks in a sentence.
    const status = lab(page).locator('.kiq-wb-announcer[role="status"]');
    await expect.poll(() => status.textContent(), { timeout: 5_000 }).toMatch(/^Quick grade finished: Fail\. .*Failed checks?: .*no-duplicates/);
    expect(await lab(page).locator('.kiq-wb-report').getAttribute('aria-live')).toBeNull();

    // The next hint is the one about the failed check, offered below the report and in the toolbar.
    const offer = lab(page).locator('.kiq-wb-hints__offer');
    await expect.poll(() => offer.isVisible()).toBe(true);
    const failedCheck = /The check (\S+) failed/.exec((await offer.textContent()) ?? '')?.[1];
    expect(failedCheck).toBeTruthy();
    const failedChecks = await lab(page).locator('.kiq-wb-check[data-passed="false"] strong').allTextContents();
    expect(failedChecks).toContain(failedCheck);
    expect(await lab(page).getByRole('button', { name: `Show hint for ${failedCheck}` }).count()).toBe(1);
    await lab(page).locator('.kiq-wb__head').scrollIntoViewIfNeeded(); // the learner is at the toolbar
    await lab(page).getByRole('button', { name: `Show hint for ${failedCheck}` }).click();
    const hint = lab(page).locator('.kiq-wb-hints__hint').first();
    await expect.poll(() => hint.isVisible()).toBe(true);
    expect(await hint.locator('.kiq-wb-hints__for').textContent()).toBe(`For the failed check ${failedCheck}:`);
    await expect.poll(() => hint.evaluate((el) => el === document.activeElement)).toBe(true);
    const box = await hint.evaluate((el) => {
      const r = el.getBoundingClientRect();
      return { top: r.top, bottom: Math.min(r.bottom, r.top + 80), height: innerHeight };
    });
    expect(box.top, 'the hint scrolled into view').toBeGreaterThanOrEqual(0);
    expect(box.bottom, 'the hint scrolled into view').toBeLessThanOrEqual(box.height);
    if (failedCheck === 'no-duplicates') expect(await hint.textContent()).toMatch(/offsets in the transaction/i);
    await page.screenshot({ path: path.join(SHOTS, 'a11y-hint-for-failed-check.png'), fullPage: false });

    await lab(page).locator('.kiq-wb-report').scrollIntoViewIfNeeded();
    for (const theme of ['dark', 'light'] as const) {
      await setTheme(page, theme);
      await page.evaluate((t) => { document.documentElement.dataset.theme = t; }, theme);
      await page.waitForTimeout(300);
      expect((await record(page, `workbench with report (${theme})`)).severe).toEqual([]);
    }
    await page.screenshot({ path: path.join(SHOTS, 'a11y-report-fail.png'), fullPage: false });
    await page.close();
  }, 240_000);

  it('leads the keyboard to the lab and its terminal, in and out of the editor, and back to Run after Stop', async () => {
    const page = await browser.newPage();
    await openLab(page, SOLUTION);
    // Skip links: the first Tab stops of the page, after Starlight's "Skip to content".
    await page.goto(`${baseUrl}${LESSON}`);
    const tabTo = async (pattern: RegExp) => {
      for (let i = 0; i < 6; i++) {
        await page.keyboard.press('Tab');
        if (pattern.test((await focused(page)).text)) return;
      }
      throw new Error(`no Tab stop matching ${pattern} among the first six: ${JSON.stringify(await focused(page))}`);
    };
    await tabTo(/^Skip to the lab: /);
    await tabTo(/^Skip to the terminal of the lab: /);
    await page.keyboard.press('Enter');
    await expect.poll(async () => (await focused(page)).inTerminal, { timeout: 60_000 }).toBe(true);
    await page.goto(`${baseUrl}${LESSON}`);
    await tabTo(/^Skip to the lab: /);
    await page.keyboard.press('Enter');
    // The page is still loading its editor: on a busy machine each read of the focus can take seconds.
    await expect.poll(async () => (await focused(page)).tag, { timeout: 30_000 }).toBe('kiq-lab');
    await lab(page).locator('.monaco-editor').waitFor({ timeout: 60_000 });
    await expect.poll(() => button(page, 'Run').isEnabled(), { timeout: 30_000 }).toBe(true);

    // Tab enters the editor and leaves it again without typing into it; the keys line says so.
    const code = () => lab(page).evaluate(() => (document.querySelector('.monaco-editor .view-lines') as HTMLElement).innerText);
    const before = await code();
    const keys = lab(page).locator('.kiq-wb-keys');
    expect(await keys.textContent()).toMatch(/Tab moves on to the next control \(Ctrl\+M to indent with it\)/);
    await lab(page).getByRole('button', { name: 'Expand' }).focus();
    await page.keyboard.press('Tab');
    expect((await focused(page)).inEditor, 'Tab enters the editor').toBe(true);
    await page.keyboard.press('Tab');
    expect((await focused(page)).inEditor, 'Tab leaves the editor').toBe(false);
    await page.keyboard.press('Shift+Tab');
    expect((await focused(page)).inEditor, 'Shift+Tab comes back').toBe(true);
    await page.keyboard.press('Shift+Tab');
    expect((await focused(page)).text).toBe('Expand');
    expect(await code()).toBe(before);
    // Ctrl+M makes Tab indent (and says so); Ctrl+M again lets it move on.
    await page.keyboard.press('Tab');
    await page.keyboard.press('Control+m');
    await expect.poll(() => keys.getAttribute('data-tab')).toBe('indents');
    await page.keyboard.press('Tab');
    expect((await focused(page)).inEditor).toBe(true);
    await page.keyboard.press('Control+z');
    await page.keyboard.press('Control+m');
    await expect.poll(() => keys.getAttribute('data-tab')).toBe('moves-focus');
    await page.keyboard.press('Tab');
    expect((await focused(page)).inEditor).toBe(false);

    // Run from the keyboard: focus waits on Stop while it runs, Stop gives it back to Run.
    await button(page, 'Run').focus();
    await page.keyboard.press('Enter');
    await expect.poll(async () => (await focused(page)).text, { timeout: 10_000 }).toBe('Stop');
    await expect.poll(() => lab(page).evaluate((el) => (el as HTMLElement & { transcript: string }).transcript), { timeout: 60_000 }).toMatch(/\[i1\]/);
    await page.keyboard.press('Enter');
    await expect.poll(async () => (await focused(page)).text, { timeout: 30_000 }).toBe('Run');
    expect(await button(page, 'Run').isEnabled()).toBe(true);
    await page.close();
  }, 240_000);

  // The lesson's second lab mounts after the TypeScript mode has loaded (it brings more editor
  // contributions): that editor threw "depends on UNKNOWN service ICodeLensCache/treeViewsDndService".
  it('mounts both workbenches of a lesson at phone width (390x844) without JavaScript errors', async () => {
    const phone = await launchBrowser({ viewport: { width: 390, height: 844 } });
    try {
      const page = await phone.newPage();
      await page.goto(`${baseUrl}${LESSON}`);
      await lab(page).scrollIntoViewIfNeeded();
      await lab(page).locator('.monaco-editor').waitFor({ timeout: 60_000 });
      await lab(page).locator('.xterm-rows').waitFor({ timeout: 30_000 });
      await lab(page).locator('.monaco-editor textarea').focus();
      await page.keyboard.type('// ');
      await page.waitForTimeout(2_000);
      const second = page.locator('kiq-lab[data-lab-id="copy"]');
      await second.scrollIntoViewIfNeeded();
      await second.locator('.monaco-editor').waitFor({ timeout: 60_000 });
      await page.waitForTimeout(2_000);
      await page.screenshot({ path: path.join(SHOTS, 'a11y-phone.png'), fullPage: false });
      expect(phone.pageErrors).toEqual([]);
    } finally {
      await phone.close();
    }
  }, 120_000);

  it('has no serious or critical axe violation on any page, in either theme', async () => {
    const page = await browser.newPage();
    await page.goto(`${baseUrl}/`);
    await seedProgress(page);
    const lessons = await page.locator('nav.sidebar a[href^="/10-1/"]').evaluateAll((as) => as.map((a) => (a as HTMLAnchorElement).getAttribute('href')!));
    expect(lessons.length).toBeGreaterThan(20);
    expect(lessons).toContain('/10-1/90-glossary/');
    // The class view, signed in with the token (it keeps a session cookie).
    const signIn = await page.goto(`${baseUrl}/instructor?token=${INSTRUCTOR_TOKEN}`);
    expect(signIn?.status()).toBe(200);
    const pages = ['/', ...lessons, '/labs/', '/instructor'];
    const severe: string[] = [];
    // Each page is loaded once and audited in both themes, switched in place as the theme picker
    // does (Starlight's data-theme; the workbench follows it, src/components/workbench/theme.ts):
    // the same DOM in the other colours, without a second load and a second injection of axe. The
    // first theme gets every rule, the second the rules that judge colours.
    for (const href of pages) {
      await page.goto(`${baseUrl}${href}`);
      await page.waitForLoadState('load');
      await switchTheme(page, 'dark');
      const dark = await record(page, `${href} (dark)`);
      expect(dark.colourRules, `${href}: axe ran its colour-contrast rule`).toContain('color-contrast');
      await switchTheme(page, 'light');
      const light = await record(page, `${href} (light: the colour rules)`, dark.colourRules);
      severe.push(...dark.severe, ...light.severe);
    }
    await page.close();
    expect(severe, severe.join('\n')).toEqual([]);
  }, 600_000);
});
