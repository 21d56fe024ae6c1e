/**
 * End to end in a real browser (Debian's chromium driven by playwright-core) against the built site
 * served by `npm start`'s server, with the real runner and the real broker: every lesson renders
 * without errors; the reference solution grades PASS; a broken variant FAILs naming no-duplicates
 * with evidence; `consume ... --isolation read_uncommitted` marks aborted records. Screenshots go
 * to test-results/.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ROOT_DIR } from '../../lab-server/core/paths.ts';
import { launchBrowser } from '../support/browser.ts';

const SHOTS = path.join(ROOT_DIR, 'test-results');
const LESSON = '/10-1/04-single-stage/';
const lab = (page: Page) => page.locator('kiq-lab[data-lab-id="single-stage"]');
let server: ChildProcess;
let baseUrl = '';
let browser: Awaited<ReturnType<typeof launchBrowser>>;
const serverLog: string[] = [];

function startCourse(): Promise<string> {
  server = spawn(process.execPath, ['--import', 'tsx', 'lab-server/cli/start.ts'], {
    cwd: ROOT_DIR,
    env: { ...process.env, PORT: '0', KAFKA_BROKERS: inject('brokers').join(',') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    const onLine = (line: string) => {
      serverLog.push(line);
      const ready = /KafkaIQ is ready: (http:\/\/\S+?)\/?\s/.exec(`${line} `);
      if (ready) resolve(ready[1]!);
    };
    readline.createInterface({ input: server.stdout! }).on('line', onLine);
    readline.createInterface({ input: server.stderr! }).on('line', onLine);
    server.once('exit', (code) => reject(new Error(`npm start exited (${code}):\n${serverLog.slice(-20).join('\n')}`)));
  });
}

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

/** xterm draws only the visible rows: scroll up through the scrollback collecting text. */
async function terminalText(page: Page): Promise<string> {
  const rows = lab(page).locator('.xterm-rows');
  const seen: string[] = [];
  const box = await rows.boundingBox();
  for (let i = 0; i < 40; i++) {
    seen.push(await rows.innerText());
    if (box) {
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await page.mouse.wheel(0, -400);
      await page.waitForTimeout(50);
    }
  }
  return seen.join('\n');
}

async function typeCommand(page: Page, command: string): Promise<void> {
  await lab(page).locator('.xterm-helper-textarea').focus();
  await page.keyboard.type(command, { delay: 5 });
  await page.keyboard.press('Enter');
}

beforeAll(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  baseUrl = await startCourse();
  browser = await launchBrowser({ colorScheme: 'light' });
}, 420_000);

afterAll(async () => {
  await browser?.close();
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    await new Promise((resolve) => server.once('exit', resolve));
  }
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
    expect(await lab(page).locator('.kiq-wb-check').count()).toBe(7);
  }, 240_000);

  it('fails a broken variant naming no-duplicates with evidence, then shows aborted records on request', async () => {
    const page = await browser.newPage();
    await openLab(page, fs.readFileSync(path.join(ROOT_DIR, 'labs/single-stage/broken/offsets-after-commit.ts'), 'utf8'));
    const verdict = await gradeAndWait(page, 'Quick grade');
    await lab(page).locator('.kiq-wb-report').scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(SHOTS, 'report-fail.png'), fullPage: false });
    expect(verdict).toBe('fail');
    const failed = lab(page).locator('.kiq-wb-check', { has: page.locator('[aria-label="failed"]') });
    expect(await failed.filter({ hasText: 'no-duplicates' }).count()).toBe(1);
    const evidence = await failed.filter({ hasText: 'no-duplicates' }).locator('li code').allTextContents();
    expect(evidence.some((line) => /output-\d+@\d+ .*duplicates output-\d+@\d+/.test(line)), evidence.join('\n')).toBe(true);

    await typeCommand(page, 'consume OUTPUT_TOPIC --isolation read_uncommitted');
    await expect.poll(async () => terminalText(page), { timeout: 30_000, intervals: [1_000] }).toMatch(/ABORTED/);
    const text = await terminalText(page);
    expect(text).toMatch(/commit marker|marker/);
    await page.screenshot({ path: path.join(SHOTS, 'terminal-consume.png'), fullPage: false });
  }, 240_000);
});
