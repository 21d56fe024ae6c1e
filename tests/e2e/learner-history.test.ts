/**
 * End to end in real Chromium against `npm start`'s server, the real runner and broker: what the
 * learner keeps. A grade is kept with its report and program: listed under the lab, reopened
 * after a reload, loaded into the editor, diffed with the current code, listed by the terminal's
 * `history`; the reference solution is revealed only after a grade, and the class view records it
 * (before the pass). Progress credits a lab to its home lesson only, and a lesson once it was
 * opened and its checks answered. The terminal queries the lab's database (`sql`) and `consume`
 * shows a window. A display name with parentheses is saved; a refused one says why beside the field.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_DIR } from '../../lab-server/core/paths.ts';
import { launchBrowser } from '../support/browser.ts';
import { startCourseServer, type CourseServer } from '../support/course-server.ts';
import { brokenProgram } from '../support/broken-program.ts';
import { testBrokers } from '../support/brokers.ts';

const TOKEN = 'learner-history-instructor-token-0123456789';
let server: CourseServer;
let baseUrl = '';
let browser: Awaited<ReturnType<typeof launchBrowser>>;

const lab = (page: Page, id: string) => page.locator(`kiq-lab[data-lab-id="${id}"]`);

async function openLab(page: Page, lesson: string, id: string): Promise<void> {
  await page.goto(`${baseUrl}${lesson}`);
  await lab(page, id).scrollIntoViewIfNeeded();
  await lab(page, id).locator('.monaco-editor').waitFor({ timeout: 60_000 });
  await lab(page, id).locator('.xterm-rows').waitFor({ timeout: 30_000 });
  await expect.poll(() => lab(page, id).getByRole('button', { name: 'Grade', exact: true }).isEnabled(), { timeout: 30_000 }).toBe(true);
}

/** A terminal command goes to the server and back (the attempt store): seconds under CI's load. */
const TERMINAL_ANSWER = { timeout: 15_000 };

function terminalText(page: Page, id: string): Promise<string> {
  return lab(page, id).evaluate((el) => (el as HTMLElement & { transcript: string }).transcript);
}

async function typeCommand(page: Page, id: string, command: string): Promise<void> {
  await lab(page, id).locator('.xterm-helper-textarea').focus();
  await page.keyboard.type(command, { delay: 2 });
  await page.keyboard.press('Enter');
}

/** Starts from a clean learner: a session id of its own and nothing else in storage. */
async function freshLearner(page: Page, session: string, code?: { lab: string; text: string }): Promise<void> {
  await page.goto(`${baseUrl}/`);
  await page.evaluate(
    ({ session, code }) => {
      localStorage.clear();
      localStorage.setItem('kafkaiq:session', session);
      if (code) localStorage.setItem(`kafkaiq:code:${code.lab}`, code.text);
    },
    { session, code },
  );
}

beforeAll(async () => {
  server = await startCourseServer(testBrokers(), 'start', { env: { KAFKAIQ_INSTRUCTOR_TOKEN: TOKEN } });
  baseUrl = server.url;
  browser = await launchBrowser({ colorScheme: 'light' });
}, 420_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe('the learner keeps what the grader found', () => {
  it('keeps every grade with its report and program: listed, reopened after a reload, loaded, diffed, and in `history`', async () => {
    const page = await browser.newPage();
    const graded = brokenProgram('single-stage', 'offsets-after-commit');
    await freshLearner(page, `history-${Date.now()}`, { lab: 'single-stage', text: graded });
    await openLab(page, '/10-1/04-single-stage/', 'single-stage');
    const wb = lab(page, 'single-stage');
    // Before any grade the solution is not offered.
    await expect.poll(() => wb.getByRole('button', { name: 'Show the reference solution' }).isDisabled()).toBe(true);

    await wb.getByRole('button', { name: 'Quick grade', exact: true }).click();
    await wb.locator('.kiq-wb-report .kiq-wb-verdict').waitFor({ state: 'visible', timeout: 170_000 });
    const verdict = await wb.locator('.kiq-wb-report .kiq-wb-verdict').getAttribute('data-verdict');
    await expect.poll(() => wb.locator('.kiq-wb-history__item').count(), { timeout: 15_000 }).toBe(1);
    const item = wb.locator('.kiq-wb-history__item').first();
    expect(await item.innerText()).toMatch(/#1[\s\S]*quick plan · seed \d+/);
    expect(await item.getAttribute('data-verdict')).toBe(verdict);

    // The reference solution: fetched from the server now, not part of the page.
    const html = await (await fetch(`${baseUrl}/10-1/04-single-stage/`)).text();
    const solution = fs.readFileSync(path.join(ROOT_DIR, 'labs/single-stage/solution.ts'), 'utf8');
    const solutionLine = solution.split('\n').find((l) => /sendOffsets/.test(l))!.trim();
    expect(html).not.toContain(solutionLine);
    await wb.getByRole('button', { name: 'Show the reference solution' }).click();
    await wb.locator('.kiq-wb-solution').waitFor({ timeout: 15_000 }).catch(async (err) => {
      fs.writeFileSync(path.join(ROOT_DIR, 'test-results/learner-history-solution.txt'), await terminalText(page, 'single-stage'));
      throw err;
    });
    expect(await wb.locator('.kiq-wb-solution').innerText()).toContain(solutionLine);
    await expect.poll(() => wb.locator('.kiq-wb-history__note').innerText()).toMatch(/before you passed this lab/);

    // The class view records the reveal, before the pass.
    const classView = await fetch(`${baseUrl}/instructor`, { headers: { Authorization: `Bearer ${TOKEN}` } });
    expect(classView.status).toBe(200);
    expect(await classView.text()).toMatch(/single-stage: <strong>before passing<\/strong>/);

    // Another program in the editor, then a reload: the last report comes back from the history.
    await page.goto(`${baseUrl}/`);
    await page.evaluate(() => localStorage.setItem('kafkaiq:code:single-stage', '// a different program\n'));
    await openLab(page, '/10-1/04-single-stage/', 'single-stage');
    await wb.locator('.kiq-wb-report .kiq-wb-verdict').waitFor({ state: 'visible', timeout: 15_000 });
    expect(await wb.locator('.kiq-wb-report .kiq-wb-verdict').getAttribute('data-verdict')).toBe(verdict);
    await expect.poll(() => terminalText(page, 'single-stage'), TERMINAL_ANSWER).toContain('Your last grade of this lab (attempt #1');

    // Diff: the attempt's program (-) against the editor's (+).
    await wb.getByRole('button', { name: 'Diff with your current code: the program of attempt #1' }).click();
    await wb.locator('.kiq-wb-diff').waitFor({ timeout: 15_000 });
    const diff = await wb.locator('.kiq-wb-diff').innerText();
    expect(diff).toContain('+// a different program');
    expect(diff).toMatch(/^-.*commitOffsets/m);

    // Load: the attempt's program goes back into the editor (and is saved as the learner's).
    await wb.getByRole('button', { name: 'Load into the editor: the program of attempt #1' }).click();
    await expect.poll(() => page.evaluate(() => localStorage.getItem('kafkaiq:code:single-stage')), { timeout: 15_000 }).toBe(graded);

    // The terminal's history command does the same.
    await typeCommand(page, 'single-stage', 'history');
    await expect.poll(() => terminalText(page, 'single-stage'), TERMINAL_ANSWER).toMatch(/#1\s+\S+\s+quick\s+seed/);
    expect(await terminalText(page, 'single-stage')).toContain('reference solution shown');
    await typeCommand(page, 'single-stage', 'history show 1');
    await expect.poll(() => terminalText(page, 'single-stage'), TERMINAL_ANSWER).toContain('Attempt #1 (');
    await typeCommand(page, 'single-stage', 'history diff 1');
    await expect.poll(() => terminalText(page, 'single-stage'), TERMINAL_ANSWER).toContain('exactly the code in the editor now');
    await typeCommand(page, 'single-stage', 'history show 9');
    await expect.poll(() => terminalText(page, 'single-stage'), TERMINAL_ANSWER).toContain('No attempt #9');
    expect(browser.pageErrors).toEqual([]);
  }, 300_000);

  it('credits a lab to its home lesson only, and completes a lesson once it was opened, its checks answered and its labs passed', async () => {
    const page = await browser.newPage();
    await freshLearner(page, `progress-${Date.now()}`);
    await page.goto(`${baseUrl}/`);
    const row = (lesson: string) => page.locator(`.kiq-progress tr[data-lesson="10-1/${lesson}"]`);
    const checks = Number(await row('04-single-stage').getAttribute('data-checks'));
    // single-stage passed (as the workbench records it), every check of 10.1.4 answered.
    await page.evaluate((checks) => {
      localStorage.setItem('kafkaiq:progress', JSON.stringify({ passed: { 'single-stage': new Date().toISOString() } }));
      const answers = Object.fromEntries(Array.from({ length: checks }, (_, i) => [`check-${i}`, { picked: 0, correct: true, at: new Date().toISOString() }]));
      localStorage.setItem('kafkaiq:predict', JSON.stringify({ lessons: { '10-1/04-single-stage': answers } }));
    }, checks);
    await page.reload();
    const status = (lesson: string) => row(lesson).locator('.kiq-progress__status');
    // Not opened yet: not complete, though its lab and checks are done.
    await expect.poll(() => status('04-single-stage').innerText()).toBe('1/1 labs');
    expect(await status('04-single-stage').getAttribute('data-status')).not.toBe('complete');
    // 10.1.3 and 10.1.8 embed the same lab for practice: it does not complete them.
    expect(await status('03-consumer-isolation').innerText()).toBe('Not opened');
    expect(await row('03-consumer-isolation').innerText()).toContain('Practice lab: single-stage');
    expect(await status('10-anti-patterns').innerText()).toBe('Not opened');

    await page.goto(`${baseUrl}/10-1/04-single-stage/`);
    await page.locator('#starlight__sidebar a[href="/10-1/04-single-stage/"] .kiq-side-progress__badge').first().waitFor({ timeout: 10_000 });
    expect(await page.locator('#starlight__sidebar a[href="/10-1/04-single-stage/"] .kiq-side-progress__badge').first().innerText()).toBe('✓');
    expect(await page.locator('#starlight__sidebar a[href="/10-1/03-consumer-isolation/"] .kiq-side-progress').count()).toBe(0);
    await page.goto(`${baseUrl}/`);
    await expect.poll(() => status('04-single-stage').innerText()).toBe('Complete');
    expect(await status('03-consumer-isolation').innerText()).toBe('Not opened');
  }, 120_000);

  it('shows the run\'s GROUP_ID and topic in the environment panel, queries the lab database with `sql` (SELECT only, bounded) and shows a window of a topic with `consume`', async () => {
    const page = await browser.newPage();
    const solution = fs.readFileSync(path.join(ROOT_DIR, 'labs/db-sink/solution.ts'), 'utf8');
    await freshLearner(page, `sql-${Date.now()}`, { lab: 'db-sink', text: solution });
    await openLab(page, '/10-1/21-idempotent-db-writes/', 'db-sink');
    const wb = lab(page, 'db-sink');
    await wb.getByRole('button', { name: 'Run', exact: true }).click();
    // The environment panel shows this run's values: the namespaced topic and group, no placeholder.
    const envValue = (name: string) => wb.locator('.kiq-wb-env tr', { has: page.locator('th code', { hasText: new RegExp(`^${name}$`) }) }).locator('.kiq-wb-env__value');
    await expect.poll(() => envValue('GROUP_ID').isVisible(), { timeout: 30_000 }).toBe(true);
    expect(await envValue('GROUP_ID').innerText()).toMatch(/^kiq-[0-9a-f]{32}-/);
    expect(await envValue('ORDERS_TOPIC').innerText()).toMatch(/^kiq-[0-9a-f]{32}-/);
    // The database is the attempt's while the Run goes on: query it once rows arrive.
    await expect
      .poll(
        async () => {
          await typeCommand(page, 'db-sink', 'sql SELECT count(*) AS orders FROM orders');
          await page.waitForTimeout(1_500);
          return /orders\s*\n[─ ]+\n\s*[1-9]\d*/.test(await terminalText(page, 'db-sink'));
        },
        { timeout: 120_000, interval: 3_000 },
      )
      .toBe(true)
      .catch(async (err) => {
        fs.writeFileSync(path.join(ROOT_DIR, 'test-results/learner-history-sql.txt'), await terminalText(page, 'db-sink'));
        throw err;
      });
    await typeCommand(page, 'db-sink', 'sql DELETE FROM orders');
    await expect.poll(() => terminalText(page, 'db-sink'), TERMINAL_ANSWER).toContain('sql runs one SELECT');
    await typeCommand(page, 'db-sink', 'sql SELECT 1; DELETE FROM orders');
    await expect.poll(() => terminalText(page, 'db-sink'), TERMINAL_ANSWER).toMatch(/error.*sql: .*(multiple commands|syntax)/i);
    await typeCommand(page, 'db-sink', 'sql WITH gone AS (DELETE FROM orders RETURNING 1) SELECT count(*) FROM gone');
    // Refused by the server either way: a data-modifying WITH inside the bounding subquery, or the READ ONLY transaction.
    await expect.poll(() => terminalText(page, 'db-sink'), TERMINAL_ANSWER).toMatch(/data-modifying statement|read-only transaction/);
    await typeCommand(page, 'db-sink', 'sql SELECT g FROM generate_series(1, 500) AS g');
    await expect.poll(() => terminalText(page, 'db-sink'), TERMINAL_ANSWER).toContain('First 50 rows shown');

    await typeCommand(page, 'db-sink', 'consume ORDERS_TOPIC --partition 0 --limit 5');
    await expect.poll(() => terminalText(page, 'db-sink'), TERMINAL_ANSWER).toMatch(/partition 0: \d+ earlier entries not shown/);
    const listing = (await terminalText(page, 'db-sink')).split('consume ORDERS_TOPIC --partition 0 --limit 5').at(-1)!;
    expect(listing.match(/^p0@\d+/gm)?.length ?? 0).toBeLessThanOrEqual(5);
    await wb.getByRole('button', { name: 'Stop', exact: true }).click();
  }, 240_000);

  it('saves a display name with parentheses and shows a refusal beside the field', async () => {
    const page = await browser.newPage();
    await freshLearner(page, `name-${Date.now()}`);
    await page.goto(`${baseUrl}/`);
    const input = page.locator('#kiq-display-name-input');
    // Unique per run: names are unique in the class, and the attempt store outlives a run.
    const name = `Ada (evening class ${Date.now() % 1_000_000})`;
    await input.fill(name);
    await page.locator('kiq-display-name').getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => page.locator('.kiq-display-name__status').innerText()).toContain(`Saved: your instructor sees you as "${name}"`);
    await input.fill('Ada <b>');
    await page.locator('kiq-display-name').getByRole('button', { name: 'Save' }).click();
    const error = page.locator('#kiq-display-name-error');
    await expect.poll(() => error.isVisible()).toBe(true);
    expect(await error.innerText()).toMatch(/^Not saved: a display name may use letters/);
    expect(await input.getAttribute('aria-invalid')).toBe('true');
    expect(await input.getAttribute('aria-describedby')).toBe('kiq-display-name-error');
  }, 60_000);
});
