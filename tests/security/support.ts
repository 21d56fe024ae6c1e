/**
 * A learner as the security tests play one: a WebSocket to the real server (`npm start`'s entry
 * point), a session of its own, Run and Grade, and everything the server says back.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import WebSocket from 'ws';
import { ROOT_DIR } from '../../lab-server/core/paths.ts';
import type { GradeReport } from '../../src/shared/report.ts';
import { serverMessageSchema, type ServerMessage } from '../../src/shared/messages.ts';

export const SOLUTION = fs.readFileSync(path.join(ROOT_DIR, 'labs/single-stage/solution.ts'), 'utf8');

export class Learner {
  readonly messages: ServerMessage[] = [];
  private waiters: Array<() => void> = [];

  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const parsed = serverMessageSchema.safeParse(JSON.parse(String(data)));
      if (parsed.success) this.messages.push(parsed.data);
      for (const w of this.waiters.splice(0)) w();
    });
  }

  /** `headers` adds to the browser's Origin, e.g. the X-Forwarded-For a trusted proxy would add for this learner. */
  static async connect(serverUrl: string, headers: Record<string, string> = {}): Promise<Learner> {
    // The site's own origin, as a browser on the course page sends it (a socket without one is refused).
    const ws = new WebSocket(`${serverUrl.replace(/^http/, 'ws')}/ws`, { headers: { Origin: serverUrl, ...headers } });
    await new Promise<void>((resolve, reject) => ws.once('open', () => resolve()).once('error', reject));
    const learner = new Learner(ws);
    learner.send({ type: 'hello', protocol: 1, sessionId: `sec-${randomBytes(8).toString('hex')}` });
    await learner.until((m) => m.type === 'welcome', 30_000);
    return learner;
  }

  send(message: unknown): void {
    this.ws.send(JSON.stringify(message));
  }

  /** Waits for a message matching the predicate (already received ones count). */
  async until(match: (m: ServerMessage) => boolean, timeoutMs: number, from = 0): Promise<ServerMessage> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.messages.slice(from).find(match);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching message within ${timeoutMs} ms; last lines:\n${this.lines().slice(-15).join('\n')}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Every output line so far, as "stream: line". */
  lines(): string[] {
    return this.messages.flatMap((m) => (m.type === 'output' ? [`${m.instance}/${m.stream}: ${m.line}`] : m.type === 'error' ? [`error: ${m.message}`] : []));
  }

  output(): string {
    return this.lines().join('\n');
  }

  async grade(code: string, quick = true, timeoutMs = 120_000, lab = 'single-stage'): Promise<GradeReport> {
    const from = this.messages.length;
    this.send({ type: 'grade', lab, code, quick });
    const report = await this.until((m) => m.type === 'report' || m.type === 'error', timeoutMs, from);
    if (report.type === 'error') throw new Error(`grade refused: ${report.message}`);
    return (report as Extract<ServerMessage, { type: 'report' }>).report;
  }

  /** Runs the program until a line matches `done` (or the time is up), then stops it. */
  async run(code: string, done: RegExp, timeoutMs = 60_000, lab = 'single-stage'): Promise<string> {
    const from = this.messages.length;
    this.send({ type: 'run', lab, code });
    await this.until((m) => (m.type === 'output' && done.test(m.line)) || m.type === 'error', timeoutMs, from);
    const stopAt = this.messages.length;
    this.send({ type: 'stop' });
    await this.until((m) => m.type === 'state' && m.activity === 'idle', 30_000, stopAt);
    return this.lines().join('\n');
  }

  close(): void {
    this.ws.close();
  }
}

/** The other learner of every test: the single-stage solution, graded (quick) at the same time. */
export async function innocentGrade(serverUrl: string): Promise<GradeReport> {
  const learner = await Learner.connect(serverUrl);
  try {
    return await learner.grade(SOLUTION, true, 150_000);
  } finally {
    learner.close();
  }
}
