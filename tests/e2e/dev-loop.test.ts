/**
 * The authoring loop an instructor uses (`npm run dev`): Astro's dev server with the lab server
 * behind its proxy. A lesson edit shows in the open browser within 5 s, without a build, and a lab
 * grades there as it does on `npm start`'s built site. A lab.ts mistake is one line, not a crash.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Frame, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bestEffort } from '../../lab-server/core/best-effort.ts';
import { ROOT_DIR } from '../../lab-server/core/paths.ts';
import { launchBrowser } from '../support/browser.ts';
import { startCourseServer, type CourseServer } from '../support/course-server.ts';
import { testBrokers } from '../support/brokers.ts';

// A page of its own (outside 10-1/, so not a lesson of the course): edited, then removed. Laid out
// as a lesson is, its prose above its lab: the reloads an edit causes do not load the workbench,
// which loads only once its lab scrolls into view.
const PAGE_FILE = path.join(ROOT_DIR, 'src/content/docs/dev-loop-check.mdx');
const PROSE = Array.from({ length: 40 }, (_, i) => `Paragraph ${i + 1} of the lesson, before its lab.`).join('\n\n');
const page = (marker: string) => `---\ntitle: Dev loop check\n---\n\nimport Lab from '@components/Lab.astro';\n\n<p id="marker">${marker}</p>\n\n${PROSE}\n\n<Lab id="single-stage" />\n`;
let server: CourseServer;
let browser: Awaited<ReturnType<typeof launchBrowser>>;

beforeAll(async () => {
  // The 5 s is what an instructor waits for at their own machine. In CI the lab matrix grades
  // beside this file and keeps both cores busy on purpose; this worker, and the dev server and
  // browser it starts (they inherit it), get ahead of it. Only where allowed (root, or
  // CAP_SYS_NICE); elsewhere the file runs as it is, and says so.
  await bestEffort('run the dev-loop test ahead of the other lanes (nice -5)', () => os.setPriority(-5), (line) => console.log(line));
  fs.writeFileSync(PAGE_FILE, page('first version'));
  server = await startCourseServer(testBrokers(), 'dev');
  browser = await launchBrowser({ colorScheme: 'light' });
}, 240_000);

afterAll(async () => {
  fs.rmSync(PAGE_FILE, { force: true });
  await browser?.close();
  await server?.stop();
});

const lab = (p: Page) => p.locator('kiq-lab[data-lab-id="single-stage"]');

/** Resolves once the tab has not navigated for `quietMs`. */
async function navigationsSettled(tab: Page, quietMs = 1_500): Promise<void> {
  let last = Date.now();
  const navigated = (frame: Frame) => {
    if (frame === tab.mainFrame()) last = Date.now();
  };
  tab.on('framenavigated', navigated);
  try {
    while (Date.now() - last < quietMs) await sleep(100);
  } finally {
    tab.off('framenavigated', navigated);
  }
}

describe('npm run dev', () => {
  it('shows a lesson edit in the browser within 5 s, then grades a lab there', async () => {
    const tab = await browser.newPage();
    // The first request compiles the page and lets Vite optimize its dependencies (which reloads
    // the page once): done before the clock of the 5 s edit starts. With the lanes grading beside
    // it, that first compile has taken over 30 s (playwright's default for a navigation).
    await tab.goto(`${server.url}/dev-loop-check/`, { timeout: 120_000 });
    await expect
      .poll(() => tab.locator('#marker').textContent({ timeout: 2_000 }).catch(() => null), { timeout: 120_000, message: server.log.slice(-15).join('\n') })
      .toBe('first version');
    await tab.waitForLoadState('networkidle');

    const edited = Date.now();
    fs.writeFileSync(PAGE_FILE, page('second version'));
    await expect.poll(() => tab.locator('#marker').textContent().catch(() => ''), { timeout: 5_000, interval: 100 }).toBe('second version');
    console.log(`lesson edit visible after ${Date.now() - edited} ms`);

    // One save reloads the page two or three times (measured: three navigations within a second):
    // let them end before opening it again, and put the solution into storage as each document
    // starts, so no reload can come between setting it and the page reading it.
    await navigationsSettled(tab);
    await tab.addInitScript((code) => localStorage.setItem('kafkaiq:code:single-stage', code), fs.readFileSync(path.join(ROOT_DIR, 'labs/single-stage/solution.ts'), 'utf8'));
    await tab.goto(`${server.url}/dev-loop-check/`, { timeout: 60_000 });
    await lab(tab).scrollIntoViewIfNeeded();
    await lab(tab).locator('.monaco-editor').waitFor({ timeout: 120_000 });
    await expect.poll(() => lab(tab).getByRole('button', { name: 'Quick grade', exact: true }).isEnabled(), { timeout: 60_000 }).toBe(true);
    await lab(tab).getByRole('button', { name: 'Quick grade', exact: true }).click();
    const verdict = lab(tab).locator('.kiq-wb-verdict');
    await verdict.waitFor({ state: 'visible', timeout: 170_000 });
    expect(await verdict.getAttribute('data-verdict')).toBe('pass');
  }, 400_000);

  it('re-reads a lab folder on change and names a lab.ts mistake in one line', async () => {
    const labFile = path.join(ROOT_DIR, 'labs/single-stage/lab.ts');
    const original = fs.readFileSync(labFile, 'utf8');
    const from = server.log.length;
    try {
      fs.writeFileSync(labFile, original.replace(/title: '/, "titel: '"));
      await expect.poll(() => server.log.slice(from).find((line) => line.startsWith('[labs] single-stage:')), { timeout: 10_000 }).toMatch(/^\[labs\] single-stage: .*titel/);
    } finally {
      fs.writeFileSync(labFile, original);
    }
    await expect.poll(() => server.log.slice(from).some((line) => line === '[labs] single-stage: reloaded'), { timeout: 10_000 }).toBe(true);
  }, 30_000);
});
