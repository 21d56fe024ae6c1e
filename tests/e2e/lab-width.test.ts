/**
 * The lab in a lesson's column, end to end in a real browser (Debian's chromium driven by
 * playwright-core) at 1400x900 against the built site served by `npm start`'s server, with the real
 * runner and broker:
 *  - a program line of 200+ characters wraps in the editor: its end is within the editor's
 *    width, it takes several rows, and there is nothing to scroll sideways;
 *  - a quick grade's report in the terminal is wrapped between words: read row by row, the
 *    terminal holds the same words as the report's unwrapped text (src/shared/format-report.ts),
 *    so no word is split across two rows;
 *  - Expand makes the lab wider than the prose column (side by side), and the same button
 *    (then "Collapse") brings it back;
 *  - when the window narrows, the terminal narrows and the report is laid out again for it: its
 *    words stay whole (xterm alone would re-wrap it at any character).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_DIR } from '../../lab-server/core/paths.ts';
import { formatReport } from '../../src/shared/format-report.ts';
import type { GradeReport } from '../../src/shared/report.ts';
import { launchBrowser } from '../support/browser.ts';
import { startCourseServer, type CourseServer } from '../support/course-server.ts';
import { brokenProgram } from '../support/broken-program.ts';
import { testBrokers } from '../support/brokers.ts';

const LESSON = '/10-1/04-single-stage/';
const LAB_ID = 'single-stage';
const SHOTS = path.join(ROOT_DIR, 'test-results');
const lab = (page: Page) => page.locator(`kiq-lab[data-lab-id="${LAB_ID}"]`);
/** The workbench itself: inside <kiq-lab>, or in the expanded view's dialog. */
const workbench = (page: Page) => page.locator('.kiq-wb').filter({ has: page.locator('.monaco-editor') }).first();

/** A comment of 200+ characters, with a marker word at its very end. */
const LONG_LINE = `// ${Array.from({ length: 24 }, (_, i) => `widthcheck${i}`).join(' ')} LINEENDMARK`;
const BROKEN = brokenProgram('single-stage', 'read-uncommitted');
const PROGRAM = `${LONG_LINE}\n${BROKEN}`;

let server: CourseServer;
let baseUrl = '';
let browser: Awaited<ReturnType<typeof launchBrowser>>;

interface Row {
  text: string;
  wrapped: boolean;
}

beforeAll(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  server = await startCourseServer(testBrokers());
  baseUrl = server.url;
  browser = await launchBrowser({ viewport: { width: 1400, height: 900 } });
}, 420_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe('the lab in the lesson column at 1400x900', () => {
  it('wraps a long code line, wraps the report between words, and expands wider than the prose column', async () => {
    expect(LONG_LINE.length).toBeGreaterThan(200);
    const session = `lab-width-${Date.now()}`;
    const page = await browser.newPage();
    // The workbench restores the learner's saved code: that is how a program gets into the editor.
    await page.goto(`${baseUrl}/`);
    await page.evaluate(
      ({ id, code, sessionId }) => {
        localStorage.setItem('kafkaiq:session', sessionId);
        localStorage.removeItem(`kafkaiq:client:${id}`);
        localStorage.setItem(`kafkaiq:code:${id}`, code);
      },
      { id: LAB_ID, code: PROGRAM, sessionId: session },
    );
    await page.goto(`${baseUrl}${LESSON}`);
    await lab(page).scrollIntoViewIfNeeded();
    await lab(page).locator('.monaco-editor').waitFor({ timeout: 60_000 });
    await lab(page).locator('.xterm-rows').waitFor({ timeout: 30_000 });
    await expect.poll(() => lab(page).getByRole('button', { name: 'Grade', exact: true }).isEnabled(), { timeout: 30_000 }).toBe(true);

    // (1) The long line wraps: its last word is inside the editor, it takes several view lines, and
    // there is nothing to scroll sideways.
    const editor = lab(page).locator('.monaco-editor');
    await lab(page).locator('.monaco-editor textarea').focus();
    await page.keyboard.press('Control+Home'); // the long line is line 1: rendered at the top
    // Measured in one step in the page: Monaco redraws its view lines while the lab settles its
    // width, so a span found in one call can be gone by the next.
    const lineEnd = () =>
      editor.evaluate((el) => {
        const spans = Array.from(el.querySelectorAll('.view-line span')).filter((s) => s.textContent?.includes('LINEENDMARK'));
        const marker = spans.at(-1);
        return marker ? { markerRight: marker.getBoundingClientRect().right, editorRight: el.getBoundingClientRect().right } : null;
      });
    let end: Awaited<ReturnType<typeof lineEnd>> = null;
    await expect.poll(async () => (end = await lineEnd()), { timeout: 10_000 }).not.toBeNull();
    const { markerRight, editorRight } = end!;
    expect(markerRight, 'the end of the long line is inside the editor').toBeLessThanOrEqual(editorRight);
    const lineRows = await editor.locator('.view-line', { hasText: /widthcheck|LINEENDMARK/ }).count();
    expect(lineRows, 'the long line is shown on several rows').toBeGreaterThan(1);
    // Monaco draws its own scrollbar: the horizontal slider as wide as its track means there is
    // nothing to scroll sideways (a line running off the edge would make it narrower).
    const horizontal = await editor.evaluate((el) => {
      const track = el.querySelector<HTMLElement>('.scrollbar.horizontal');
      const slider = track?.querySelector<HTMLElement>('.slider');
      return { track: track?.offsetWidth ?? 0, slider: slider?.offsetWidth ?? 0 };
    });
    expect(horizontal.track, 'the editor has its horizontal scrollbar track').toBeGreaterThan(0);
    expect(horizontal.slider, `no horizontal scrolling: ${JSON.stringify(horizontal)}`).toBeGreaterThanOrEqual(horizontal.track - 1);
    await page.screenshot({ path: path.join(SHOTS, 'lab-width-editor.png'), fullPage: false });

    // (2) A quick grade of a broken program; its report in the terminal keeps every word whole.
    await lab(page).getByRole('button', { name: 'Quick grade', exact: true }).click();
    const verdict = lab(page).locator('.kiq-wb-verdict');
    await verdict.waitFor({ state: 'visible', timeout: 170_000 });
    expect(await verdict.getAttribute('data-verdict')).toBe('fail');
    const attempts = (await (await fetch(`${baseUrl}/api/attempts?lab=${LAB_ID}`, { headers: { 'X-KafkaIQ-Session': session } })).json()) as { attempts: { id: number }[] };
    expect(attempts.attempts.length).toBe(1);
    const report = (await (await fetch(`${baseUrl}/api/attempts/${attempts.attempts[0]!.id}`, { headers: { 'X-KafkaIQ-Session': session } })).json()) as GradeReport;
    const unwrapped = formatReport(report).split('\n');
    const words = unwrapped.join(' ').split(/\s+/).filter(Boolean);

    const rows = () => lab(page).evaluate((el) => (el as HTMLElement & { terminalRows: Row[] }).terminalRows);
    const isHeading = (r: Row) => r.text.startsWith(`FAIL  ${LAB_ID} (quick)`);
    /** The words of the terminal's rows from the report's heading on, as many as the report has. */
    const reportTokens = (all: Row[]) =>
      all
        .slice(all.map(isHeading).lastIndexOf(true))
        .flatMap((r) => r.text.split(/\s+/).filter(Boolean))
        .slice(0, words.length);
    // The report is written in the next animation frame after the verdict shows.
    await expect.poll(async () => (await rows()).some(isHeading), { timeout: 10_000 }).toBe(true);
    const all = await rows();
    const start = all.map(isHeading).lastIndexOf(true);
    const tokens = reportTokens(all);
    const reportRows = all.slice(start, start + unwrapped.length * 3);
    const shown = reportRows.map((r) => `${r.wrapped ? '~' : '|'} ${r.text}`).join('\n');
    // The test means something only if the report needed wrapping at this width.
    const longestRow = Math.max(...all.map((r) => r.text.length));
    expect(Math.max(...unwrapped.map((l) => l.length)), `the report has lines wider than the terminal:\n${shown}`).toBeGreaterThan(longestRow);
    // A word split across rows ("o" / "utput") shows up as two tokens where the report has one.
    expect(tokens, `the terminal's rows keep the report's words whole:\n${shown}`).toEqual(words);
    const terminalWidth = async () => (await workbench(page).locator('.xterm-screen').boundingBox({ timeout: 1_000 }))?.width ?? 0;
    const columnWidth = await terminalWidth();
    await lab(page).locator('.xterm').scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(SHOTS, 'lab-width-report.png'), fullPage: false });

    // (3) Expand: the lab becomes wider than the prose column; the same button collapses it.
    const proseWidth = (await lab(page).boundingBox())!.width;
    const before = (await workbench(page).boundingBox())!.width;
    expect(before).toBeLessThanOrEqual(proseWidth + 1);
    const expand = lab(page).getByRole('button', { name: 'Expand', exact: true });
    expect(await expand.getAttribute('aria-pressed')).toBe('false');
    await expand.click();
    const dialog = page.locator('dialog.kiq-wb-dialog');
    await expect.poll(() => dialog.evaluate((el) => (el as HTMLDialogElement).open), { timeout: 5_000 }).toBe(true);
    const collapse = dialog.getByRole('button', { name: 'Collapse', exact: true });
    expect(await collapse.getAttribute('aria-pressed')).toBe('true');
    await expect.poll(async () => (await dialog.locator('.kiq-wb').boundingBox())?.width ?? 0, { timeout: 5_000 }).toBeGreaterThan(proseWidth * 1.5);
    await expect.poll(() => dialog.locator('.kiq-wb').getAttribute('data-layout'), { timeout: 5_000 }).toBe('wide');
    // Whatever width the terminal has in this layout, the report's words stay whole in it.
    await expect.poll(async () => reportTokens(await rows()), { timeout: 5_000, message: "expanded: the report's words stay whole" }).toEqual(words);
    await page.screenshot({ path: path.join(SHOTS, 'lab-width-expanded.png'), fullPage: false });
    await collapse.click();
    await expect.poll(() => page.locator('dialog.kiq-wb-dialog').count(), { timeout: 5_000 }).toBe(0);
    const back = lab(page).getByRole('button', { name: 'Expand', exact: true });
    expect(await back.getAttribute('aria-pressed')).toBe('false');
    expect(await lab(page).locator('.kiq-wb').count(), 'the workbench is back in the lesson').toBe(1);
    await expect.poll(async () => Math.abs(((await lab(page).locator('.kiq-wb').boundingBox())?.width ?? 0) - before), { timeout: 5_000 }).toBeLessThanOrEqual(2);
    await expect.poll(terminalWidth, { timeout: 5_000 }).toBe(columnWidth);
    await expect.poll(async () => reportTokens(await rows()), { timeout: 5_000, message: 'collapsed again: the report is laid out for the column' }).toEqual(words);
    // A narrower window narrows the terminal: xterm alone would re-wrap the report at any
    // character; it is laid out again for the new width, every word whole.
    await page.setViewportSize({ width: 1000, height: 900 });
    await expect.poll(terminalWidth, { timeout: 5_000 }).toBeLessThan(columnWidth - 50);
    await expect.poll(async () => reportTokens(await rows()), { timeout: 5_000, message: 'narrowed: the report is laid out for the narrower terminal' }).toEqual(words);
    expect(browser.pageErrors).toEqual([]);
    await page.close();
  }, 300_000);
});
