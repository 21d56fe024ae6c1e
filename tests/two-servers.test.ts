/**
 * Several lab servers behind a load balancer (README, Running a class): two `npm start` servers on
 * one Kafka cluster and one PostgreSQL (KAFKAIQ_DATABASE_URL), behind a real nginx that proxies
 * HTTP and the WebSocket. A learner grades through one server and comes back through the other:
 * the same history. Each server's class view shows every learner, whichever server they used. A
 * server killed in the middle of a grade leaves that grade as an `error` attempt, which the other
 * server records when the learner comes back, and the learner's next grade there passes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { PROTOCOL_VERSION } from '../src/shared/messages.ts';
import { LABS_DIR } from '../lab-server/core/paths.ts';
import { testBrokers } from './support/brokers.ts';
import { startCourseServer, type CourseServer } from './support/course-server.ts';
import { freePort, Nginx, nginxBinary, NGINX_MISSING } from './support/nginx.ts';
import { postgresBin, POSTGRES_MISSING, ThrowawayPostgres } from './support/postgres.ts';

const TOKEN = 'two-servers-instructor-token-0123456789';
const brokers = testBrokers();
const pgBin = postgresBin();
const nginxBin = nginxBinary();
const ready = Boolean(pgBin && nginxBin);
const solution = fs.readFileSync(path.join(LABS_DIR, 'single-stage', 'solution.ts'), 'utf8');

let postgres: ThrowawayPostgres | null = null;
let balancer: Nginx | null = null;
const servers: Array<CourseServer & { pid: number }> = [];
/** A `via` value nginx sends to each server (by port). */
const via = new Map<number, string>();

/** One learner's WebSocket through the balancer to the server `route` picks. */
class Learner {
  private readonly ws: WebSocket;
  private readonly inbox: Array<{ type: string; [k: string]: unknown }> = [];
  private readonly waiters: Array<() => void> = [];

  constructor(route: string, readonly sessionId: string) {
    this.ws = new WebSocket(`ws://127.0.0.1:${balancer!.port}/ws?via=${route}`, { headers: { Origin: balancer!.url } });
    this.ws.on('message', (data) => {
      this.inbox.push(JSON.parse(String(data)) as { type: string });
      for (const wake of this.waiters.splice(0)) wake();
    });
  }

  async next(type: string, timeoutMs = 120_000): Promise<{ type: string; [k: string]: unknown }> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const found = this.inbox.findIndex((m) => m.type === type);
      if (found >= 0) return this.inbox.splice(found, 1)[0]!;
      const error = this.inbox.find((m) => m.type === 'error');
      if (error) throw new Error(`the server answered an error: ${JSON.stringify(error)}`);
      if (Date.now() > until) throw new Error(`no ${type} within ${timeoutMs} ms; got ${this.inbox.map((m) => m.type).join(', ')}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 250);
      });
    }
  }

  async hello(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      if (this.ws.readyState === WebSocket.OPEN) return resolve();
      this.ws.once('open', () => resolve());
      this.ws.once('error', reject);
    });
    this.ws.send(JSON.stringify({ type: 'hello', protocol: PROTOCOL_VERSION, sessionId: this.sessionId }));
    await this.next('welcome', 30_000);
  }

  send(message: object): void {
    this.ws.send(JSON.stringify(message));
  }

  close(): void {
    this.ws.close();
  }
}

const upstreamOf = (response: Response) => Number(/:(\d+)$/.exec(response.headers.get('x-kafkaiq-upstream') ?? '')?.[1]);

beforeAll(async () => {
  if (!ready) return;
  postgres = new ThrowawayPostgres(pgBin!);
  await postgres.start();
  const port = await freePort();
  const env = { KAFKAIQ_DATABASE_URL: postgres.url, KAFKAIQ_ORIGINS: `http://127.0.0.1:${port}`, KAFKAIQ_INSTRUCTOR_TOKEN: TOKEN, KAFKAIQ_TRUST_PROXY: '1' };
  // Both at once: the schema's migration runs once, under its advisory lock.
  servers.push(...(await Promise.all([startCourseServer(brokers, 'start', { env }), startCourseServer(brokers, 'start', { env })])));
  balancer = new Nginx(nginxBin!, port);
  await balancer.start(servers.map((s) => Number(new URL(s.url).port)));
  for (let i = 0; via.size < 2 && i < 200; i++) {
    const answer = await fetch(`${balancer.url}/auth/me?via=r${i}`);
    const upstream = upstreamOf(answer);
    if (!via.has(upstream)) via.set(upstream, `r${i}`);
  }
}, 180_000);

afterAll(async () => {
  await balancer?.stop();
  await Promise.all(servers.map((s) => s.stop()));
  postgres?.stopNow();
});

describe('two lab servers behind nginx, on one cluster and one PostgreSQL', () => {
  it.runIf(!ready && Boolean(process.env.CI))('have nginx and PostgreSQL in CI', () => {
    expect.fail(!pgBin ? POSTGRES_MISSING : NGINX_MISSING);
  });

  it.runIf(ready)('keeps a learner\'s history across servers, and each class view shows every learner', async () => {
    const [portA, portB] = servers.map((s) => Number(new URL(s.url).port)) as [number, number];
    expect([...via.keys()].sort()).toEqual([portA, portB].sort());
    const [viaA, viaB] = [via.get(portA)!, via.get(portB)!];

    // Grace grades through A, Alan through B, at the same time.
    const grace = new Learner(viaA, 'two-servers-grace-0001');
    const alan = new Learner(viaB, 'two-servers-alan-0002');
    await Promise.all([grace.hello(), alan.hello()]);
    const named = await fetch(`${balancer!.url}/api/attempts/display-name?via=${viaA}`, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/json', 'X-KafkaIQ-Session': grace.sessionId, Origin: balancer!.url },
      body: JSON.stringify({ displayName: 'Grace H.' }),
    });
    expect(named.status).toBe(204);
    expect(upstreamOf(named)).toBe(portA);
    for (const learner of [grace, alan]) learner.send({ type: 'grade', lab: 'single-stage', code: solution, quick: true, seed: 7 });
    const [graceReport, alanReport] = await Promise.all([grace.next('report'), alan.next('report')]);
    expect((graceReport.report as { verdict: string }).verdict).toBe('pass');
    expect((alanReport.report as { verdict: string }).verdict).toBe('pass');
    grace.close();
    alan.close();

    // Grace comes back through B: her attempt is there, with its program.
    const back = new Learner(viaB, grace.sessionId);
    await back.hello();
    back.send({ type: 'history' });
    const history = (await back.next('history')) as unknown as { attempts: Array<{ id: number; lab: string; hasCode: boolean }> };
    expect(history.attempts.map((a) => [a.lab, a.hasCode])).toEqual([['single-stage', true]]);
    back.send({ type: 'attempt', id: history.attempts[0]!.id });
    expect(((await back.next('attempt')) as { code?: string }).code).toBe(solution);
    back.close();

    // Each server's class view lists both learners.
    for (const route of [viaA, viaB]) {
      const page = await fetch(`${balancer!.url}/instructor?via=${route}`, { headers: { Authorization: `Bearer ${TOKEN}` } });
      expect(page.status).toBe(200);
      const html = await page.text();
      expect(html).toContain('Grace H.');
      expect(html).toContain('2 learners with a grade');
    }
  }, 240_000);

  it.runIf(ready)('ends a grade whose server is killed as error, and the next grade on the other server passes', async () => {
    const [portA, portB] = servers.map((s) => Number(new URL(s.url).port)) as [number, number];
    const [viaA, viaB] = [via.get(portA)!, via.get(portB)!];
    const learner = new Learner(viaA, 'two-servers-kill-0003');
    await learner.hello();
    learner.send({ type: 'grade', lab: 'single-stage', code: solution, quick: false, seed: 11 });
    // Its program is running on A: then A dies, as a machine would.
    for (;;) {
      const progress = (await learner.next('progress', 60_000)) as { phase?: string };
      if (progress.phase === 'running') break;
    }
    process.kill(servers[0]!.pid, 'SIGKILL');
    learner.close();
    // Back through B (A no longer answers): once A has stopped touching the grade, it is an error attempt.
    const until = Date.now() + 90_000;
    let attempts: Array<{ id: number; lab: string; verdict: string }> = [];
    while (Date.now() < until) {
      const back = new Learner(viaB, learner.sessionId);
      await back.hello();
      back.send({ type: 'history' });
      attempts = ((await back.next('history')) as unknown as { attempts: typeof attempts }).attempts;
      if (attempts.length) {
        back.send({ type: 'attempt', id: attempts[0]!.id });
        const { report } = (await back.next('attempt')) as unknown as { report: { message: string } };
        expect(report.message).toMatch(/^The lab server grading this \(.+\) stopped before the grade finished/);
        // The next grade, on B, passes.
        back.send({ type: 'grade', lab: 'single-stage', code: solution, quick: true, seed: 12 });
        expect(((await back.next('report')) as unknown as { report: { verdict: string } }).report.verdict).toBe('pass');
        back.close();
        break;
      }
      back.close();
      await new Promise((resolve) => setTimeout(resolve, 3_000));
    }
    expect(attempts.map((a) => [a.lab, a.verdict])).toEqual([['single-stage', 'error']]);
  }, 240_000);
});
