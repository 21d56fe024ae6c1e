/**
 * A real headless Chromium for end-to-end tests, driven by playwright-core with the system's
 * Debian chromium (no browser download is possible here; never `npx playwright install`).
 * Set CHROMIUM_PATH to use another binary; `apt-get install -y chromium` provides /usr/bin/chromium.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Flags verified on these machines (shared/NOTES-stack.md): no sandbox as root, no network chatter. */
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface TestBrowser {
  context: BrowserContext;
  newPage(): Promise<Page>;
  close(): Promise<void>;
}

/**
 * Launches Chromium with a fresh profile (so localStorage starts empty) and collects the page
 * errors of every page, so a test can assert that the UI logged none.
 */
export async function launchBrowser(options: { viewport?: { width: number; height: number }; colorScheme?: 'light' | 'dark' } = {}): Promise<TestBrowser & { pageErrors: string[] }> {
  if (!fs.existsSync(CHROMIUM_PATH)) {
    throw new Error(`No Chromium at ${CHROMIUM_PATH}: install it with \`apt-get install -y chromium\` or set CHROMIUM_PATH`);
  }
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM_PATH,
    // The flags carry --headless themselves; playwright must not add its own variant.
    headless: false,
    args: CHROMIUM_FLAGS,
    viewport: options.viewport ?? { width: 1280, height: 900 },
    colorScheme: options.colorScheme ?? 'dark',
  });
  const pageErrors: string[] = [];
  const watch = (page: Page) => page.on('pageerror', (err) => pageErrors.push(err.message));
  context.pages().forEach(watch);
  context.on('page', watch);
  return {
    context,
    pageErrors,
    async newPage() {
      const existing = context.pages().find((page) => page.url() === 'about:blank');
      return existing ?? context.newPage();
    },
    async close() {
      await context.close().catch(() => {});
      fs.rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

export type { Browser, Page };
