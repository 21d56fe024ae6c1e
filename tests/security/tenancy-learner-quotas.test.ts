/**
 * Per-learner quotas on a real `npm start` server (learner-quotas.ts): one learner (one address)
 * minting a session per socket gets at most its sockets, its grades (running or waiting) and its
 * runs; the rest are refused with LIMIT_EXCEEDED. Meanwhile another learner's solution grade
 * passes without waiting behind them, and the quota comes back when the learner's work ends.
 * Addresses come from X-Forwarded-For through a trusted proxy (KAFKAIQ_TRUST_PROXY=1).
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
const sessionId = (tag: string) => `quota-${tag}-${Math.random().toString(36).slice(2, 10)}`;

/** Sockets of one learner (address), each with a session of its own. */
async function learnerSockets(address: string, count: number): Promise<{ clients: WsClient[]; refused: number[] }> {
  const opened = await Promise.all(Array.from({ length: count }, () => WsClient.open(server.url, { Origin: server.url, 'X-Forwarded-For': address })));
  const clients = opened.filter((c): c is WsClient => c instanceof WsClient);
  for (const [i, c] of clients.entries()) {
    c.send({ type: 'hello', protocol: 1, sessionId: sessionId(`${address.replaceAll('.', '-')}-${i}`) });
    await c.next('welcome');
    c.messages.length = 0;
  }
  return { clients, refused: opened.filter((c): c is number => typeof c === 'number') };
}

/** The first answer to an activity: accepted (it progresses or queues) or refused with a code. */
async function firstAnswer(client: WsClient): Promise<string> {
  for (let i = 0; i < 600; i++) {
    const hit = client.messages.find((m) => m.type === 'error' || m.type === 'queue' || m.type === 'progress' || m.type === 'state');
    if (hit) return hit.type === 'error' ? hit.code : 'accepted';
    await new Promise((r) => setTimeout(r, 100));
  }
  return 'silent';
}

beforeAll(async () => {
  server = await startCourseServer(brokers, 'start', { env: { KAFKAIQ_TRUST_PROXY: '1', KAFKAIQ_MULTI_USER: '1' } });
}, 120_000);

afterEach(async () => {
  await WsClient.closeAll();
});

afterAll(async () => {
  await server?.stop();
});

describe('one learner cannot take the server from the others', () => {
  it(`holds one address to ${DEFAULT_LIMITS.connectionsPerIp} sockets and ${DEFAULT_LIMITS.gradesPerLearner} grades; another learner's grade passes meanwhile`, async () => {
    const { clients, refused } = await learnerSockets('10.66.0.1', DEFAULT_LIMITS.connectionsPerIp + 4);
    expect(clients.length).toBe(DEFAULT_LIMITS.connectionsPerIp);
    expect(refused).toEqual(Array(4).fill(429));
    for (const c of clients) c.send({ type: 'grade', lab: 'single-stage', code: solution, quick: true });
    const answers = await Promise.all(clients.map(firstAnswer));
    expect(answers.filter((a) => a === 'accepted').length).toBe(DEFAULT_LIMITS.gradesPerLearner);
    expect(answers.filter((a) => a === 'LIMIT_EXCEEDED').length).toBe(DEFAULT_LIMITS.connectionsPerIp - DEFAULT_LIMITS.gradesPerLearner);
    const refusal = clients.flatMap((c) => c.messages).find((m) => m.type === 'error' && m.code === 'LIMIT_EXCEEDED');
    expect(refusal?.type === 'error' && refusal.message).toMatch(/grades \(running or waiting\) from this address/);

    // The innocent learner: another address, a socket and a grade at once, which passes.
    const innocent = await learnerSockets('10.77.0.1', 1);
    expect(innocent.refused).toEqual([]);
    innocent.clients[0]!.send({ type: 'grade', lab: 'single-stage', code: solution, quick: true });
    const report = (await innocent.clients[0]!.next('report', 170_000)).report;
    expect(report.verdict, report.message).toBe('pass');

    // The quota comes back: once the learner's grades end, a new one is accepted.
    const graded = clients.filter((_, i) => answers[i] === 'accepted');
    await Promise.all(graded.map((c) => c.next('report', 170_000)));
    const idle = clients.find((_, i) => answers[i] === 'LIMIT_EXCEEDED')!;
    idle.messages.length = 0;
    idle.send({ type: 'grade', lab: 'single-stage', code: solution, quick: true });
    expect(await firstAnswer(idle)).toBe('accepted');
    const again = (await idle.next('report', 170_000)).report;
    expect(again.verdict, again.message).toBe('pass');
  }, 420_000);

  it(`holds one address to ${DEFAULT_LIMITS.runsPerLearner} runs at once, and a run stopped frees its slot`, async () => {
    const { clients } = await learnerSockets('10.66.0.2', DEFAULT_LIMITS.runsPerLearner + 2);
    for (const c of clients) c.send({ type: 'run', lab: 'single-stage', code: solution });
    const answers = await Promise.all(clients.map(firstAnswer));
    expect(answers.filter((a) => a === 'accepted').length).toBe(DEFAULT_LIMITS.runsPerLearner);
    expect(answers.filter((a) => a === 'LIMIT_EXCEEDED').length).toBe(2);
    const running = clients.find((_, i) => answers[i] === 'accepted')!;
    running.send({ type: 'stop' });
    await expect.poll(() => running.messages.some((m) => m.type === 'state' && m.activity === 'idle'), { timeout: 60_000 }).toBe(true);
    // The slot is back once the stopped run has ended on the server (a moment after its idle state).
    const waiting = clients.find((_, i) => answers[i] === 'LIMIT_EXCEEDED')!;
    let answer = '';
    for (let i = 0; i < 20 && answer !== 'accepted'; i++) {
      waiting.messages.length = 0;
      waiting.send({ type: 'run', lab: 'single-stage', code: solution });
      answer = await firstAnswer(waiting);
      if (answer !== 'accepted') await new Promise((r) => setTimeout(r, 500));
    }
    expect(answer).toBe('accepted');
  }, 180_000);
});
