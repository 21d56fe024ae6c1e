/**
 * End to end in a real browser (Debian's chromium driven by playwright-core) against the built site
 * served by `npm start`'s server, with the real runner and the real broker: every lesson renders
 * without errors; the reference solution grades PASS; a broken variant FAILs naming no-duplicates
 * with evidence; `consume ... --isolation read_uncommitted` marks aborted records. Screenshots go
 * to test-results/.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_DIR } from '../../lab-server/core/paths.ts';
import { loadLab } from '../../lab-server/labs/load-lab.ts';
import { launchBrowser } from '../support/browser.ts';
import { startCourseServer, type CourseServer } from '../support/course-server.ts';
import { brokenProgram } from '../support/broken-program.ts';
import { testBrokers } from '../support/brokers.ts';

const SHOTS = path.join(ROOT_DIR, 'test-results');
const LESSON = '/10-1/04-single-stage/';
const lab = (page: Page) => page.locator('kiq-lab[data-lab-id="single-stage"]');
let server: CourseServer;
let baseUrl = '';
let browser: Awaited<ReturnType<typeof launchBrowser>>;

async function openLab(page: Page, code?: string): Promise<void> {
  if (code !== undefined) {
    // The workbench restores the learner's saved code: that is how we put a program in the editor.
    await page.goto(`${baseUrl}/`);
    await page.evaluate((text) => localStorage.setItem('kafkaiq:code:single-stage', text), code);
  }
  await page.goto(`${baseUrl}${LESSON}`);
  await lab(page).scrollIntoViewIfNeeded();
  await lab(page).locator('.monaco-editor').waitFor({ timeout: 60_000 });
  await lab(page).locator('.xterm-rows').waitFor({ timeout: 30_000 });
  await expect.poll(() => lab(page).getByRole('button', { name: 'Grade', exact: true }).isEnabled(), { timeout: 30_000 }).toBe(true);
}

async function gradeAndWait(page: Page, button: 'Grade' | 'Quick grade'): Promise<string> {
  await lab(page).getByRole('button', { name: button, exact: true }).click();
  const verdict = lab(page).locator('.kiq-wb-verdict');
  await verdict.waitFor({ state: 'visible', timeout: 170_000 });
  return (await verdict.getAttribute('data-verdict')) ?? '';
}

/**
 * Relays the page's WebSocket, holding the server's `attempt` replies (a reopened report) until
 * the page has sent a `grade`, then delivering them in order.
 */
async function holdRestoredReportUntilGrade(page: Page): Promise<void> {
  await page.routeWebSocket(/\/ws$/, (ws) => {
    const server = ws.connectToServer();
    let gradeSent = false;
    const held: string[] = [];
    ws.onMessage((message) => {
      if (typeof message === 'string' && JSON.parse(message).type === 'grade') {
        gradeSent = true;
        server.send(message);
        setTimeout(() => held.splice(0).forEach((m) => ws.send(m)), 500);
        return;
      }
      server.send(message);
    });
    server.onMessage((message) => {
      if (!gradeSent && typeof message === 'string' && JSON.parse(message).type === 'attempt') held.push(message);
      else ws.send(message);
    });
  });
}

/** The terminal's whole scrollback, as the <kiq-lab> element exposes it. */
function terminalText(page: Page): Promise<string> {
  return lab(page).evaluate((el) => (el as HTMLElement & { transcript: string }).transcript);
}

async function typeCommand(page: Page, command: string): Promise<void> {
  await lab(page).locator('.xterm-helper-textarea').focus();
  await page.keyboard.type(command, { delay: 5 });
  await page.keyboard.press('Enter');
}

beforeAll(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  server = await startCourseServer(testBrokers());
  baseUrl = server.url;
  browser = await launchBrowser({ colorScheme: 'light' });
}, 420_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe('the course in a browser', () => {
  it('renders every lesson of module 10.1 without console errors, in order in the sidebar', async () => {
    const page = await browser.newPage();
    const consoleErrors: string[] = [];
    page.on('console', (msg) => {
      if (msg.type() === 'error') consoleErrors.push(`${page.url()}: ${msg.text()}`);
    });
    await page.goto(`${baseUrl}/`);
    const links = await page.locator('nav.sidebar a[href^="/10-1/"]').evaluateAll((as) => as.map((a) => (a as HTMLAnchorElement).getAttribute('href')!));
    expect(links.length).toBeGreaterThanOrEqual(5);
    const labels = await page.locator('nav.sidebar a[href^="/10-1/"]').allInnerTexts();
    const numbers = labels.map((l) => /10\.1(\.\d+)+/.exec(l)?.[0] ?? '');
    expect(numbers.every(Boolean), `every sidebar entry shows its module number: ${labels.join(' | ')}`).toBe(true);
    for (const href of links) {
      await page.goto(`${baseUrl}${href}`);
      expect(await page.locator('h1').first().isVisible(), href).toBe(true);
    }
    expect(browser.pageErrors).toEqual([]);
    expect(consoleErrors.filter((e) => !/favicon/.test(e))).toEqual([]);
  }, 180_000);

  it('loads at most 50 KB of JavaScript on a lesson page before its lab, and search only when opened', async () => {
    const page = await browser.newPage();
    const scriptBytes = () =>
      page.evaluate(() =>
        (performance.getEntriesByType('resource') as PerformanceResourceTiming[])
          .filter((r) => r.initiatorType === 'script' || r.name.endsWith('.js'))
          .reduce((sum, r) => sum + r.decodedBodySize, 0),
      );
    await page.goto(`${baseUrl}${LESSON}`);
    await page.waitForLoadState('networkidle');
    await page.waitForTimeout(500); // let idle callbacks run: a script loaded in one (as Starlight's stock search UI is) counts too
    const before = await scriptBytes();
    expect(before, `${before} bytes of JavaScript before the lab`).toBeLessThanOrEqual(50 * 1024);
    await page.getByRole('button', { name: /search/i }).first().click();
    const input = page.locator('#starlight__search input');
    await input.waitFor({ timeout: 15_000 });
    await input.fill('fencing');
    await expect.poll(() => page.locator('#starlight__search .pagefind-ui__result').count(), { timeout: 15_000 }).toBeGreaterThan(0);
    expect(await scriptBytes()).toBeGreaterThan(before + 50 * 1024); // Pagefind's UI arrived with the dialog
  }, 60_000);

  it('shuffles a predict check per learner, stably across reloads, gives feedback on every option and scores the first pick', async () => {
    const page = await browser.newPage();
    const check = page.locator('kiq-predict').first();
    const order = () => check.locator('.kiq-predict__choice').evaluateAll((ls) => ls.map((l) => (l as HTMLElement).dataset.index));
    // Learner A, twice: the same order both times.
    await page.goto(`${baseUrl}/`);
    await page.evaluate(() => { localStorage.clear(); localStorage.setItem('kafkaiq:session', 'learner-aaaaaaaa'); });
    await page.goto(`${baseUrl}${LESSON}`);
    await check.waitFor();
    await expect.poll(() => check.getAttribute('data-enhanced')).toBe('true');
    const first = await order();
    await page.reload();
    await expect.poll(() => check.getAttribute('data-enhanced')).toBe('true');
    expect(await order()).toEqual(first);
    // Across many learners the right answer does not sit in one place.
    const places = new Set<number>();
    for (let n = 0; n < 12 && places.size < 2; n++) {
      await page.evaluate((id) => localStorage.setItem('kafkaiq:session', id), `learner-${n}-bbbbbbbb`);
      await page.reload();
      await expect.poll(() => check.getAttribute('data-enhanced')).toBe('true');
      const answer = await check.getAttribute('data-answer');
      places.add((await order()).indexOf(answer!));
    }
    expect(places.size).toBeGreaterThan(1);
    // A wrong pick: every option shows its feedback, and the first pick is saved and scored.
    const answer = Number(await check.getAttribute('data-answer'));
    const wrong = check.locator(`.kiq-predict__choice[data-index]:not([data-index="${answer}"])`).first();
    await wrong.click();
    await expect.poll(() => check.getAttribute('data-state')).toBe('incorrect');
    const feedback = check.locator('.kiq-predict__feedback');
    const count = await feedback.count();
    expect(count).toBeGreaterThanOrEqual(3);
    for (let i = 0; i < count; i++) expect(await feedback.nth(i).isVisible()).toBe(true);
    await check.locator(`.kiq-predict__choice[data-index="${answer}"]`).click();
    const saved = await page.evaluate(() => JSON.parse(localStorage.getItem('kafkaiq:predict') ?? '{}'));
    const picks = Object.values(saved.lessons?.['10-1/04-single-stage'] ?? {}) as { correct: boolean }[];
    expect(picks).toHaveLength(1);
    expect(picks[0].correct).toBe(false); // the first pick counts
    // The sidebar's progress shows the lesson's score at once, and after a reload.
    const total = await page.locator('kiq-predict').count();
    const sideScore = page.locator('#starlight__sidebar a[href$="/10-1/04-single-stage/"] .kiq-side-progress__badge');
    await expect.poll(() => sideScore.textContent()).toBe(`0/${total}`);
    await page.reload();
    await expect.poll(() => sideScore.textContent()).toBe(`0/${total}`);
    expect(await page.locator('#starlight__sidebar a[href$="/10-1/05-multi-stage/"] .kiq-side-progress').count()).toBe(0);
    await page.goto(`${baseUrl}/`);
    const badge = page.locator('tr[data-lesson="10-1/04-single-stage"] .kiq-progress__checks');
    await expect.poll(() => badge.textContent()).toBe(`0/${total} checks`);
    // The final quiz scores the same way, and reads "final quiz: right/total" in both places.
    await page.goto(`${baseUrl}/10-1/95-final-quiz/`);
    const quiz = page.locator('kiq-predict').first();
    await expect.poll(() => quiz.getAttribute('data-enhanced')).toBe('true');
    const questions = await page.locator('kiq-predict').count();
    await quiz.locator(`.kiq-predict__choice[data-index="${await quiz.getAttribute('data-answer')}"]`).click();
    const quizSide = page.locator('#starlight__sidebar a[href$="/10-1/95-final-quiz/"] .kiq-side-progress__badge');
    await expect.poll(() => quizSide.textContent()).toBe(`final quiz: 1/${questions}`);
    await page.goto(`${baseUrl}/`);
    await expect.poll(() => page.locator('tr[data-lesson="10-1/95-final-quiz"] .kiq-progress__checks').textContent()).toBe(`final quiz: 1/${questions}`);
    await page.close();
  }, 120_000);

  it('steps through the transaction protocol diagram', async () => {
    const page = await browser.newPage();
    await page.goto(`${baseUrl}/10-1/01-transaction-protocol/`);
    const steps = page.locator('kiq-txn-steps');
    await expect.poll(() => steps.getAttribute('data-enhanced')).toBe('true');
    const visible = () => steps.locator('.kiq-step__item:visible .kiq-step__title').allInnerTexts();
    expect(await visible()).toEqual(['0. Ready']);
    await steps.getByRole('button', { name: 'Next' }).click();
    expect(await visible()).toEqual(['1. Begin']);
    await steps.getByRole('button', { name: 'Next' }).click();
    await steps.getByRole('button', { name: 'Next' }).click();
    expect(await visible()).toEqual(['3. Produce']);
    await steps.locator('.kiq-step__item:visible summary').click();
    expect(await steps.locator('.kiq-step__item:visible .kiq-step__crash p').innerText()).toMatch(/abort marker/);
    await page.close();
  }, 60_000);

  it('grades the reference solution PASS and shows the report', async () => {
    const page = await browser.newPage();
    await openLab(page, fs.readFileSync(path.join(ROOT_DIR, 'labs/single-stage/solution.ts'), 'utf8'));
    await page.screenshot({ path: path.join(SHOTS, 'lesson-light.png'), fullPage: false });
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.evaluate(() => {
      document.documentElement.dataset.theme = 'dark';
      localStorage.setItem('starlight-theme', 'dark');
    });
    await page.screenshot({ path: path.join(SHOTS, 'lesson-dark.png'), fullPage: false });
    const verdict = await gradeAndWait(page, 'Grade');
    await lab(page).locator('.kiq-wb-report').scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(SHOTS, 'report-pass.png'), fullPage: false });
    expect(verdict).toBe('pass');
    // One row per check the lab declares, plus the integrity check every grade runs (output-log-intact).
    const declared = (await loadLab('single-stage')).definition.checks.length;
    expect(await lab(page).locator('.kiq-wb-check').count()).toBe(declared + 1);
  }, 240_000);

  it('fails a broken variant naming no-duplicates with evidence, then shows aborted records on request', async () => {
    const page = await browser.newPage();
    // The history holds the solution's PASS from the test above, and a reload brings the newest
    // report back. Its reply is held here until this grade has started, as a slow link would
    // deliver it: that stale PASS must never stand for this grade's verdict.
    await holdRestoredReportUntilGrade(page);
    await openLab(page, brokenProgram('single-stage', 'offsets-after-commit'));
    const verdict = await gradeAndWait(page, 'Quick grade');
    await lab(page).locator('.kiq-wb-report').scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(SHOTS, 'report-fail.png'), fullPage: false });
    expect(verdict).toBe('fail');
    const failed = lab(page).locator('.kiq-wb-check', { has: page.locator('[aria-label="failed"]') });
    expect(await failed.filter({ hasText: 'no-duplicates' }).count()).toBe(1);
    const evidence = await failed.filter({ hasText: 'no-duplicates' }).locator('li code').allTextContents();
    expect(evidence.some((line) => /output-\d+@\d+ .*duplicates output-\d+@\d+/.test(line)), evidence.join('\n')).toBe(true);

    await typeCommand(page, 'clear');
    await typeCommand(page, 'consume OUTPUT_TOPIC --from 0 --limit 200 --isolation read_uncommitted');
    // The listing ends with a tally; the aborted records themselves are marked in the listing.
    await expect.poll(() => terminalText(page), { timeout: 30_000, interval: 500 }).toMatch(/total: \d+ committed, [1-9]\d* ABORTED/);
    const text = await terminalText(page);
    expect(text).toMatch(/p\d+@\d+ k\d+ REC-\d+ .* ABORTED/);
    expect(text).toMatch(/── transaction marker ──/);
    await page.screenshot({ path: path.join(SHOTS, 'terminal-consume.png'), fullPage: false });
  }, 240_000);

  it('lets the learner pick @platformatic/kafka: its starter, its types in the editor, the choice kept, its solution graded', async () => {
    const page = await browser.newPage();
    await page.goto(`${baseUrl}/`);
    await page.evaluate(() => {
      localStorage.removeItem('kafkaiq:client:single-stage');
      localStorage.removeItem('kafkaiq:code:single-stage:platformatic');
    });
    await openLab(page);
    const picker = lab(page).getByRole('combobox', { name: 'Kafka client of your program' });
    await picker.selectOption('platformatic');
    const editorText = () => lab(page).locator('.monaco-editor .view-lines').innerText();
    await expect.poll(editorText, { timeout: 10_000 }).toMatch(/from\s+'@platformatic\/kafka'/);

    // Its types arrive lazily: a wrong option type is reported (F8 opens the first problem; the
    // editor renders only visible lines, so squiggles further down are not in the DOM), and the
    // right program has none. Without the types, the import itself would be "Cannot find module".
    const program = fs.readFileSync(path.join(ROOT_DIR, 'labs/single-stage/solution.platformatic.ts'), 'utf8');
    // Off the lesson page first: leaving the workbench saves what its editor holds.
    const reopen = async (code: string) => {
      await page.goto(`${baseUrl}/`);
      await page.evaluate((text) => localStorage.setItem('kafkaiq:code:single-stage:platformatic', text), code);
      await page.goto(`${baseUrl}${LESSON}`);
      await lab(page).scrollIntoViewIfNeeded();
      await lab(page).locator('.monaco-editor').waitFor({ timeout: 60_000 });
    };
    const firstProblem = async () => {
      await lab(page).locator('.monaco-editor textarea').focus();
      await page.keyboard.press('F8');
      await page.waitForTimeout(500);
      return (await lab(page).locator('.marker-widget').allInnerTexts()).join(' / ');
    };
    const wrong = program.replace('bootstrapBrokers: brokers,\n  idempotent: true', 'bootstrapBrokers: 42,\n  idempotent: true');
    expect(wrong).not.toBe(program);
    await reopen(wrong);
    expect(await lab(page).getByRole('combobox', { name: 'Kafka client of your program' }).inputValue(), 'the choice is kept').toBe('platformatic');
    await expect.poll(firstProblem, { timeout: 60_000, interval: 1_000 }).toMatch(/'number' is not assignable to type/);
    expect(await firstProblem()).not.toMatch(/Cannot find module/);

    await reopen(program);
    await expect.poll(editorText, { timeout: 10_000 }).toMatch(/stringDeserializers/);
    // The previous program's problem showed within seconds; give this one as long, twice over.
    await page.waitForTimeout(15_000);
    expect(await firstProblem()).toBe('');
    await page.screenshot({ path: path.join(SHOTS, 'platformatic-editor.png'), fullPage: false });

    await expect.poll(() => lab(page).getByRole('button', { name: 'Grade', exact: true }).isEnabled(), { timeout: 30_000 }).toBe(true);
    expect(await gradeAndWait(page, 'Quick grade')).toBe('pass');
  }, 300_000);
});
