/**
 * Scaling out: two `npm start` servers (each its own PORT and process) on one Kafka cluster grade
 * at the same time, both pass, and neither sees the other's attempt: each session's topics and
 * transactions are its own namespace, walled off by the cluster's ACLs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABS_DIR } from '../../lab-server/core/paths.ts';
import { startCourseServer, type CourseServer } from '../support/course-server.ts';
import { WsClient } from './tenancy-ws-client.ts';
import { testBrokers } from '../support/brokers.ts';

const brokers = testBrokers();
const solution = fs.readFileSync(path.join(LABS_DIR, 'single-stage', 'solution.ts'), 'utf8');
let servers: CourseServer[] = [];

beforeAll(async () => {
  servers = await Promise.all([startCourseServer(brokers, 'start'), startCourseServer(brokers, 'start')]);
}, 120_000);

afterAll(async () => {
  await WsClient.closeAll();
  await Promise.all(servers.map((s) => s.stop()));
});

describe('two lab servers on one cluster', () => {
  it('grade at the same time without seeing each other', async () => {
    expect(new Set(servers.map((s) => s.url)).size).toBe(2);
    const clients = await Promise.all(servers.map((s, i) => WsClient.session(s.url, `two-servers-${i}-${Date.now().toString(36)}`)));
    for (const c of clients) c.send({ type: 'grade', lab: 'single-stage', code: solution, quick: true });
    const reports = await Promise.all(clients.map(async (c) => (await c.next('report', 120_000)).report));
    for (const r of reports) expect(r.verdict, r.message).toBe('pass');

    const topicsOf = async (c: WsClient) => {
      c.send({ type: 'inspect', command: { what: 'topics' } });
      const { result } = await c.next('inspect-result');
      if (result.what !== 'topics') throw new Error(`expected topics, got ${result.what}`);
      return result.topics.map((t) => t.name);
    };
    const [mine, theirs] = await Promise.all(clients.map(topicsOf));
    expect(mine!.length).toBeGreaterThan(0);
    expect(theirs!.length).toBeGreaterThan(0);
    expect(mine!.filter((t) => theirs!.includes(t))).toEqual([]);
    // Each namespace is a prefix the other server's topics do not share.
    const prefix = (t: string) => t.split('-').slice(0, 2).join('-');
    expect(prefix(mine![0]!)).not.toBe(prefix(theirs![0]!));

    const txnsOf = async (c: WsClient) => {
      c.send({ type: 'inspect', command: { what: 'txns' } });
      const { result } = await c.next('inspect-result', 30_000);
      if (result.what !== 'txns') throw new Error(`expected txns, got ${result.what}`);
      return result.transactions.map((t) => t.transactionalId);
    };
    const [myTxns, theirTxns] = await Promise.all(clients.map(txnsOf));
    expect(myTxns!.length).toBeGreaterThan(0);
    expect(theirTxns!.length).toBeGreaterThan(0);
    expect(myTxns!.every((id) => id.startsWith(prefix(mine![0]!)))).toBe(true);
    expect(theirTxns!.every((id) => id.startsWith(prefix(theirs![0]!)))).toBe(true);
  }, 180_000);
});
