/**
 * npm run bench:workbench — the lesson page's JavaScript weight before and after the workbench
 * loads, and the time from clicking Run to the program's first output line. Needs the broker
 * (started if missing) and Debian's chromium. Prints figures; asserts nothing.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { connectCluster } from '../lab-server/broker/cluster.ts';
import { ROOT_DIR } from '../lab-server/core/paths.ts';
import { launchBrowser } from '../tests/support/browser.ts';
import { startCourseServer } from '../tests/support/course-server.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const cluster = await connectCluster();
const server = await startCourseServer(cluster.brokers);
const browser = await launchBrowser({ colorScheme: 'light' });
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

/** Script bytes the page has fetched so far (transfer = compressed, decoded = on disk). */
const scriptBytes = (page: Page) =>
  page.evaluate(() =>
    (performance.getEntriesByType('resource') as PerformanceResourceTiming[])
      .filter((r) => r.initiatorType === 'script' || r.name.endsWith('.js') || r.name.includes('worker'))
      .reduce((sum, r) => ({ transfer: sum.transfer + r.transferSize, decoded: sum.decoded + r.decodedBodySize }), { transfer: 0, decoded: 0 }),
  );

try {
  const page = await browser.newPage();
  await page.goto(`${server.url}/10-1/12-monitoring/`);
  await page.waitForLoadState('networkidle');
  const noLab = await scriptBytes(page);
  await page.goto(`${server.url}/10-1/04-single-stage/`);
  await page.waitForLoadState('networkidle');
  const before = await scriptBytes(page);
  const lab = page.locator('kiq-lab[data-lab-id="single-stage"]');
  await lab.scrollIntoViewIfNeeded();
  await lab.locator('.monaco-editor').waitFor({ timeout: 60_000 });
  await page.waitForLoadState('networkidle');
  await page.waitForTimeout(2_000); // the TypeScript worker starts a moment after the editor
  const after = await scriptBytes(page);
  console.log(`lesson page JS (a lesson whose lab is not built, no workbench): ${kb(noLab.decoded)} (${kb(noLab.transfer)} transferred)`);
  console.log(`lesson page JS before the workbench loads: ${kb(before.decoded)} (${kb(before.transfer)} transferred)`);
  console.log(`lesson page JS after the workbench loads (editor, terminal, TS worker): ${kb(after.decoded)} (${kb(after.transfer)} transferred)`);

  const solution = fs.readFileSync(path.join(ROOT_DIR, 'labs/single-stage/solution.ts'), 'utf8');
  // Saved code is what the editor restores; set it from a page without the workbench, which would
  // otherwise save its own buffer over it.
  await page.goto(`${server.url}/`);
  await page.evaluate((code) => localStorage.setItem('kafkaiq:code:single-stage', code), solution);
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    await page.goto(`${server.url}/10-1/04-single-stage/`);
    await lab.scrollIntoViewIfNeeded();
    await lab.locator('.monaco-editor').waitFor({ timeout: 60_000 });
    const run = lab.getByRole('button', { name: 'Run', exact: true });
    await page.waitForFunction((el) => !(el as HTMLButtonElement).disabled, await run.elementHandle(), { timeout: 30_000 });
    const element = await lab.elementHandle();
    const started = Date.now();
    await run.click();
    // Any line the program printed (tagged [i1]) counts; the solution prints after its first commit.
    await page
      .waitForFunction((el) => /\[i1\]/.test((el as HTMLElement & { transcript: string }).transcript), element, { timeout: 60_000, polling: 20 })
      .catch(async (err: unknown) => {
        console.error(await lab.evaluate((el) => (el as HTMLElement & { transcript: string }).transcript.slice(-1500)));
        throw err;
      });
    times.push(Date.now() - started);
    await lab.getByRole('button', { name: 'Stop', exact: true }).click();
    await page.waitForFunction((el) => !(el as HTMLButtonElement).disabled, await run.elementHandle(), { timeout: 30_000 });
  }
  const sorted = [...times].sort((a, b) => a - b);
  console.log(`click Run -> first program output line, ${RUNS} runs: median ${sorted[Math.floor((RUNS - 1) / 2)]} ms, worst ${sorted.at(-1)} ms (${times.join(', ')} ms)`);
} finally {
  await browser.close();
  await server.stop();
  await cluster.close();
}
