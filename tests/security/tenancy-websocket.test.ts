/**
 * The WebSocket of a real `npm start` server as a public endpoint: Origin checked, at most a few
 * sockets per IP (50 tried), a message budget per socket, one activity per session, a global cap
 * on concurrent grades with a queue whose position the learner hears, and no manual broker restart
 * on a multi-user server. Beside every refusal, a real grade on the same server passes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LABS_DIR } from '../../lab-server/core/paths.ts';
import { DEFAULT_LIMITS } from '../../lab-server/server/admission.ts';
import { startCourseServer, type CourseServer } from '../support/course-server.ts';
import { WsClient } from './tenancy-ws-client.ts';
import { testBrokers } from '../support/brokers.ts';

const brokers = testBrokers();
const solution = fs.readFileSync(path.join(LABS_DIR, 'single-stage', 'solution.ts'), 'utf8');
let server: CourseServer;
const sessionId = (tag: string) => `tenancy-${tag}-${Math.random().toString(36).slice(2, 10)}`;

async function gradeOn(client: WsClient) {
  client.send({ type: 'grade', lab: 'single-stage', code: solution, quick: true });
  return (await client.next('report', 90_000)).report;
}

beforeAll(async () => {
  // One grade at a time, so a second one queues; a multi-user server (no manual broker restart).
  server = await startCourseServer(brokers, 'start', { env: { KAFKAIQ_MAX_GRADES: '1', KAFKAIQ_MULTI_USER: '1' } });
}, 120_000);

afterEach(async () => {
  await WsClient.closeAll();
});

afterAll(async () => {
  await server?.stop();
});

describe('the WebSocket of a public lab server', () => {
  it('refuses a socket without Origin, and one from another site', async () => {
    expect(await WsClient.open(server.url, {})).toBe(403);
    expect(await WsClient.open(server.url, { Origin: 'https://evil.example' })).toBe(403);
    const own = await WsClient.open(server.url);
    expect(own).toBeInstanceOf(WsClient);
    (own as WsClient).close();
  });

  it(`opens at most ${DEFAULT_LIMITS.connectionsPerIp} sockets per IP when 50 are tried, and a grade on one of them passes`, async () => {
    const opened = await Promise.all(Array.from({ length: 50 }, () => WsClient.open(server.url)));
    const clients = opened.filter((c): c is WsClient => c instanceof WsClient);
    expect(clients.length).toBe(DEFAULT_LIMITS.connectionsPerIp);
    expect(opened.filter((c) => c === 429).length).toBe(50 - DEFAULT_LIMITS.connectionsPerIp);
    const [first, ...rest] = clients;
    await Promise.all(rest.map((c) => c.close()));
    first!.send({ type: 'hello', protocol: 1, sessionId: sessionId('fifty') });
    await first!.next('welcome');
    const report = await gradeOn(first!);
    expect(report.verdict, report.message).toBe('pass');
    first!.close();
  }, 120_000);

  it('answers a message flood with LIMIT_EXCEEDED, and one activity at a time per session', async () => {
    const client = await WsClient.session(server.url, sessionId('flood'));
    const grade = gradeOn(client);
    await client.next('progress', 30_000);
    client.send({ type: 'run', lab: 'single-stage', code: solution });
    const busy = await client.next('error');
    expect(busy.code).toBe('BUSY');
    for (let i = 0; i < DEFAULT_LIMITS.messageBurst + 40; i++) client.send({ type: 'history' });
    const errors: string[] = [];
    for (;;) {
      const error = await client.next('error', 3_000).catch(() => null);
      if (!error) break;
      errors.push(error.code);
    }
    expect(errors).toContain('LIMIT_EXCEEDED');
    const report = await grade;
    expect(report.verdict, report.message).toBe('pass');
    client.close();
  }, 120_000);

  it('queues a grade beyond the cap and tells its position; both grades pass', async () => {
    const a = await WsClient.session(server.url, sessionId('queue-a'));
    const b = await WsClient.session(server.url, sessionId('queue-b'));
    const first = gradeOn(a);
    await a.next('progress', 30_000);
    const second = gradeOn(b);
    expect((await b.next('queue')).position).toBe(1);
    expect((await b.next('queue', 90_000)).position).toBe(0);
    const [ra, rb] = await Promise.all([first, second]);
    expect(ra.verdict, ra.message).toBe('pass');
    expect(rb.verdict, rb.message).toBe('pass');
    a.close();
    b.close();
  }, 180_000);

  it('offers no manual broker restart on a multi-user server', async () => {
    const client = await WsClient.open(server.url);
    if (typeof client === 'number') throw new Error(`refused: ${client}`);
    client.send({ type: 'hello', protocol: 1, sessionId: sessionId('restart') });
    const welcome = await client.next('welcome');
    expect(welcome.brokerFaults).toBe(false);
    client.send({ type: 'fault', kind: 'broker-restart' });
    const refusal = await client.next('error');
    expect(refusal.message).toMatch(/Broker restarts are not available/);
    client.close();
  });
});
