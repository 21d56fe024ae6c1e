/**
 * The lab HTTP API (lab-server/api): the idempotency-key protocol, per-attempt namespaces, the
 * faults the grader arms (api-slow, api-error, api-timeout), the effect checks, the lab rules, and
 * the fetch crash points in a learner process running under Node's permission model. No broker
 * needed; the http-idempotency lab itself is graded in the lab matrix (tests/support/labs-matrix.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { labDefinitionSchema, pipelineLabSchema, type LabDefinitionInput } from '../../src/shared/lab.ts';
import { LabApiServer, type ApiNamespace } from '../../lab-server/api/lab-api.ts';
import { armFor, insideUnitOfWork } from '../../lab-server/runner/nemesis/api-faults.ts';
import { apiLabProblems } from '../../lab-server/labs/api-rules.ts';
import { checkApiEffects } from '../../lab-server/runner/checkers/api-effects.ts';
import type { ChildEvent } from '../../lab-server/runner/program/child/protocol.ts';
import { compileProgram } from '../../lab-server/runner/program/compile.ts';
import { ProgramInstance } from '../../lab-server/runner/program/program-instance.ts';
import type { SeededRecord } from '../../lab-server/runner/seeder.ts';

let server: LabApiServer;
let ns: ApiNamespace;
let counter = 0;

beforeAll(async () => {
  server = await LabApiServer.start();
});
afterAll(async () => {
  await server?.close();
});

const open = () => (ns = server.open(`test-${++counter}`));
const payment = (paymentId: string, amountCents = 1_000) => ({ paymentId, amountCents, currency: 'EUR' });
const post = (body: unknown, key?: string, signal?: AbortSignal, base = ns.baseUrl) =>
  fetch(`${base}/payments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
    body: JSON.stringify(body),
    signal,
  });
const json = async (res: Response) => ({ status: res.status, replayed: res.headers.get('idempotent-replayed'), body: await res.json() });

describe('idempotency keys', () => {
  it('applies a keyed request once and answers repeats with the stored response', async () => {
    open();
    const first = await json(await post(payment('p1'), 'charge:p1'));
    expect(first).toEqual({ status: 201, replayed: null, body: { paymentId: 'p1', amountCents: 1000, currency: 'EUR', status: 'charged' } });
    const again = await json(await post(payment('p1'), 'charge:p1'));
    expect(again).toEqual({ ...first, replayed: 'true' });
    expect(ns.effects.map((e) => [e.id, e.key])).toEqual([['p1', 'charge:p1']]);
  });

  it('applies a request without a key every time', async () => {
    open();
    await post(payment('p1'));
    await post(payment('p1'));
    expect(ns.effects.map((e) => [e.id, e.key])).toEqual([
      ['p1', null],
      ['p1', null],
    ]);
  });

  it('rejects a key reused for another body (422), and a key still in progress (409)', async () => {
    open();
    await post(payment('p1'), 'k');
    expect((await json(await post(payment('p1', 5), 'k'))).body.error).toBe('idempotency_key_reused');
    ns.arm({ ...armFor('api-slow', labApiSpec(), 1), delayMs: 600, calls: 1 });
    const slow = post(payment('p2'), 'k2');
    await new Promise((r) => setTimeout(r, 100));
    const busy = await post(payment('p2'), 'k2');
    expect(busy.status).toBe(409);
    expect((await slow).status).toBe(201);
    expect((await json(await post(payment('p2'), 'k2'))).replayed).toBe('true');
    expect(ns.effects.map((e) => e.id)).toEqual(['p1', 'p2']);
  });

  it('validates bodies and keys with JSON errors', async () => {
    open();
    const extra = await json(await post({ ...payment('p1'), note: 'x' }));
    expect(extra.status).toBe(400);
    expect(extra.body.error).toBe('invalid_request');
    const badKey = await json(await post(payment('p1'), 'has space'));
    expect(badKey.status).toBe(400);
    expect((await fetch(`${ns.baseUrl}/payments`, { method: 'DELETE' })).status).toBe(405);
    expect(ns.effects).toEqual([]);
  });

  it('keeps attempts apart and forgets a closed namespace (404)', async () => {
    const a = open();
    const b = server.open(`test-${++counter}`);
    await post(payment('p1'), 'same-key', undefined, a.baseUrl);
    const onB = await json(await post(payment('p1'), 'same-key', undefined, b.baseUrl));
    expect(onB.replayed).toBeNull(); // a key of another attempt means nothing here
    expect(a.effects).toHaveLength(1);
    expect(b.effects).toHaveLength(1);
    b.close();
    const gone = await json(await post(payment('p1'), undefined, undefined, b.baseUrl));
    expect(gone.status).toBe(404);
    expect(gone.body.error).toBe('unknown_namespace');
  });

  it('upserts rankings and records whether the value changed', async () => {
    open();
    const put = (count: number) =>
      fetch(`${ns.baseUrl}/rankings/c1/1000/2000`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ count }) });
    expect((await put(3)).status).toBe(201);
    expect((await put(3)).status).toBe(200);
    expect((await put(4)).status).toBe(200);
    expect(ns.effects.map((e) => [e.id, e.changed])).toEqual([
      ['c1|1000|2000', true],
      ['c1|1000|2000', false],
      ['c1|1000|2000', true],
    ]);
  });
});

describe('API faults', () => {
  it('api-error answers 5xx and applies nothing; the retry with the same key applies once', async () => {
    open();
    const hit = ns.arm(armFor('api-error', labApiSpec(), 1));
    expect((await post(payment('p1'), 'k1')).status).toBe(503);
    expect(await hit).toMatchObject({ kind: 'api-error', key: 'k1' });
    expect(ns.effects).toEqual([]);
    expect((await post(payment('p1'), 'k1')).status).toBe(201);
    expect(ns.effects).toHaveLength(1);
  });

  it('api-error passes a retry of a key already applied, and refuses the next call that would apply something new', async () => {
    open();
    expect((await post(payment('p1'), 'k1')).status).toBe(201);
    const hit = ns.arm({ ...armFor('api-error', labApiSpec(), 1), calls: 1 });
    // A retry whose effect exists: refusing it would cost a program that gives up on 5xx nothing.
    const retry = await json(await post(payment('p1'), 'k1'));
    expect(retry.replayed).toBe('true');
    expect((await post(payment('p2'), 'k2')).status).toBe(503);
    expect(await hit).toMatchObject({ kind: 'api-error', key: 'k2' });
    expect(ns.effects.map((e) => e.key)).toEqual(['k1']);
  });

  it('api-timeout applies the effect and holds the answer until the client gives up', async () => {
    open();
    ns.arm(armFor('api-timeout', labApiSpec(), 1));
    const started = Date.now();
    const lost = await post(payment('p1'), 'k1', AbortSignal.timeout(300)).catch((err: Error) => err.name);
    expect(lost).toBe('TimeoutError');
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(ns.effects).toHaveLength(1); // charged, though the client never heard
    // The server notices the closed connection a moment after the client gave up.
    for (let i = 0; i < 50 && ns.calls.at(-1)?.outcome !== 'answer-lost'; i++) await new Promise((r) => setTimeout(r, 20));
    expect(ns.calls.at(-1)).toMatchObject({ outcome: 'answer-lost', fault: 'api-timeout' });
    // The same key: the stored answer. A new key: a second charge.
    expect((await json(await post(payment('p1'), 'k1'))).replayed).toBe('true');
    await post(payment('p1'), 'k1-again');
    expect(ns.effects.map((e) => e.key)).toEqual(['k1', 'k1-again']);
  });

  it('api-timeout answers 504 to a client that waits longer than the hold', async () => {
    open();
    ns.arm({ ...armFor('api-timeout', labApiSpec(), 1), holdMs: 300 });
    expect((await post(payment('p1'), 'k1')).status).toBe(504);
    expect(ns.effects).toHaveLength(1);
  });

  it('api-slow delays the next calls; occurrence skips the first ones', async () => {
    open();
    ns.arm({ ...armFor('api-slow', labApiSpec(), 2), delayMs: 400, calls: 1 });
    let started = Date.now();
    await post(payment('p1'), 'k1');
    expect(Date.now() - started).toBeLessThan(300);
    started = Date.now();
    await post(payment('p2'), 'k2');
    expect(Date.now() - started).toBeGreaterThanOrEqual(380);
    started = Date.now();
    await post(payment('p3'), 'k3');
    expect(Date.now() - started).toBeLessThan(300);
  });

  it('a disarmed fault reports no hit', async () => {
    open();
    const hit = ns.arm(armFor('api-error', labApiSpec(), 1));
    ns.disarm();
    expect(await hit).toBeNull();
    expect((await post(payment('p1'))).status).toBe(201);
  });

  it('counts crash points in HTTP and SQL calls as inside the unit of work', () => {
    expect(insideUnitOfWork('after:http')).toBe(true);
    expect(insideUnitOfWork('before:http')).toBe(true);
    expect(insideUnitOfWork('after:db-write')).toBe(true);
    expect(insideUnitOfWork('after:send')).toBe(false);
    expect(insideUnitOfWork(undefined)).toBe(false);
  });
});

// ---- the effect checks and the lab format ------------------------------------------------------

const LAB: LabDefinitionInput = {
  title: 'charges',
  summary: 'charge each payment once',
  env: [
    { name: 'KAFKA_BROKERS', description: 'x' },
    { name: 'IN', description: 'x' },
    { name: 'OUT', description: 'x' },
    { name: 'API_URL', description: 'x' },
  ],
  topics: [
    { name: 'in', env: 'IN', partitions: 1, role: 'input', description: 'requests' },
    { name: 'out', env: 'OUT', partitions: 1, role: 'output', description: 'confirmations' },
  ],
  seeds: [{ topic: 'in', records: 6 }],
  api: {
    service: 'payments',
    what: 'charge',
    effects: (input) => {
      const p = JSON.parse(input.value) as { paymentId: string; amountCents: number; currency: string };
      return [{ id: p.paymentId, body: p }];
    },
  },
  faults: { full: [{ kind: 'kill', at: ['after:http'] }, { kind: 'api-timeout' }], quick: [{ kind: 'api-error' }] },
  checks: ['no-duplicate-effects', 'no-lost-effects', 'effects-correct'],
};

function labApiSpec() {
  return pipelineLabSchema.parse(LAB).api!;
}

describe('effect checks', () => {
  const seeded = (index: number, committed: boolean): SeededRecord => ({
    topic: 'in',
    partition: 0,
    key: 'k',
    value: JSON.stringify(payment(`p${index}`, 100 * index)),
    index,
    committed,
    offset: index,
  });
  const effect = (seq: number, id: string, amountCents: number, key: string | null, at: number) => ({
    seq,
    at,
    service: 'payments' as const,
    method: 'POST',
    path: '/payments',
    key,
    id,
    body: { paymentId: id, amountCents, currency: 'EUR' },
    changed: true,
  });

  it('finds duplicates (with the fault before the repeat), losses, charges nobody asked for, and wrong amounts', () => {
    const startedAt = 1_000_000;
    const inputs = [seeded(1, true), seeded(2, true), seeded(3, true), seeded(4, false)];
    const checks = checkApiEffects({
      api: labApiSpec(),
      effects: [
        effect(1, 'p1', 100, null, startedAt + 1_000),
        effect(2, 'p1', 100, null, startedAt + 3_000),
        effect(3, 'p2', 999, 'charge:p2', startedAt + 3_500),
        effect(4, 'p4', 400, 'charge:p4', startedAt + 4_000),
      ],
      inputs,
      faults: [{ atMs: 2_000, kind: 'kill', instance: 'i1', crashPoint: 'after:http', inTransaction: true }],
      startedAt,
    });
    const [duplicates, lost, correct] = checks;
    expect(duplicates!.passed).toBe(false);
    expect(duplicates!.evidence[0]).toBe(
      'in-0@1 key=k: charge "p1" applied 2 times (applied at +1.0 s without Idempotency-Key, +3.0 s without Idempotency-Key; the repeat came after fault kill on i1 at after:http)',
    );
    expect(duplicates!.evidence[1]).toMatch(/^charge "p4" applied 1 time\(s\) but no committed input asks for it/);
    expect(lost!.passed).toBe(false);
    expect(lost!.evidence).toEqual(['in-0@3 key=k: no charge "p3"']);
    expect(correct!.passed).toBe(false);
    expect(correct!.evidence[0]).toMatch(/charge "p2" applied with .*"amountCents":999.*expected .*"amountCents":200/);
  });

  it('passes when every committed input was applied exactly once with its data', () => {
    const inputs = [seeded(1, true), seeded(2, true), seeded(3, false)];
    const checks = checkApiEffects({ api: labApiSpec(), effects: [effect(1, 'p1', 100, 'a', 0), effect(2, 'p2', 200, 'b', 0)], inputs, faults: [], startedAt: 0 });
    expect(checks.map((c) => [c.name, c.passed])).toEqual([
      ['no-duplicate-effects', true],
      ['no-lost-effects', true],
      ['effects-correct', true],
    ]);
  });
});

describe('lab rules', () => {
  it('accepts the api block with its defaults', () => {
    const lab = pipelineLabSchema.parse(LAB);
    expect(lab.api).toMatchObject({ env: 'API_URL', count: 'applied', faults: { slowMs: 3_000, errorStatus: 503, timeoutHoldMs: 20_000 } });
    expect(apiLabProblems(lab)).toEqual([]);
  });

  it('names what is wrong', () => {
    const withoutApi = labDefinitionSchema.parse({ ...LAB, api: undefined });
    expect(apiLabProblems(withoutApi)).toEqual(['faults: api-timeout needs an api block (the program must call the lab API)']);
    const undescribed = labDefinitionSchema.parse({ ...LAB, env: LAB.env.filter((e) => e.name !== 'API_URL') });
    expect(apiLabProblems(undescribed)).toContain('env: the api block passes API_URL; describe it');
    const noChecks = labDefinitionSchema.parse({ ...LAB, checks: ['no-loss'] });
    expect(apiLabProblems(noChecks)[0]).toMatch(/^checks: a lab with an api block must list/);
    expect(labDefinitionSchema.safeParse({ ...LAB, api: { ...LAB.api, faults: { slowMs: 60_000 } } }).success).toBe(false);
  });
});

// ---- fetch crash points in a learner process ----------------------------------------------------

const FETCHER = `
import 'kafkajs'; // loads the wrapper, which instruments the global fetch
console.log('ready');
await new Promise((resolve) => setTimeout(resolve, 400)); // time for the test to arm a crash point
const res = await fetch(process.env.API_URL + '/payments', {
  method: 'POST',
  headers: { 'content-type': 'application/json', 'idempotency-key': 'charge:p1' },
  body: JSON.stringify({ paymentId: 'p1', amountCents: 100, currency: 'EUR' }),
});
console.log('answered ' + res.status);
`;

describe('fetch crash points', () => {
  it('reports before:http and after:http, and holds the program after the response for a kill', async () => {
    open();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-test-'));
    try {
      const compiled = await compileProgram(FETCHER, dir);
      const instance = new ProgramInstance('i1', 1, { kind: 'bundle', file: compiled.file, readDirs: compiled.readDirs, writeDir: dir }, { API_URL: ns.baseUrl });
      const events: ChildEvent[] = [];
      const lines: string[] = [];
      instance.on('line', (_s, line) => lines.push(line));
      const hit = new Promise<ChildEvent>((resolve) =>
        instance.on('event', (e) => {
          events.push(e);
          if (e.t === 'hit') resolve(e);
        }),
      );
      // Armed once the wrapper listens (it printed 'ready'), before the program's call.
      instance.on('line', (_s, line) => line === 'ready' && instance.send({ t: 'arm', point: 'after:http', action: 'kill', occurrence: 1 }));
      expect(await hit).toEqual({ t: 'hit', point: 'after:http', action: 'kill', txnOpen: false });
      // The response arrived (the charge is applied, through Node's permission model), and the
      // program is held right there: it never printed the answer.
      expect(ns.effects.map((e) => e.id)).toEqual(['p1']);
      expect(events.map((e) => `${e.t} ${(e as { point?: string }).point}`)).toEqual(['call before:http', 'call after:http', 'hit after:http']);
      await instance.kill();
      expect(lines.filter((l) => l.startsWith('answered'))).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);

  it('lets an unarmed program through', async () => {
    open();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-test-'));
    try {
      const compiled = await compileProgram(FETCHER, dir);
      const instance = new ProgramInstance('i1', 1, { kind: 'bundle', file: compiled.file, readDirs: compiled.readDirs, writeDir: dir }, { API_URL: ns.baseUrl });
      const points: string[] = [];
      const lines: string[] = [];
      instance.on('event', (e) => e.t === 'call' && points.push(e.point));
      instance.on('line', (_s, line) => lines.push(line));
      const { code } = await instance.exited;
      expect(lines).toContain('answered 201');
      expect(code).toBe(0);
      expect(points).toEqual(['before:http', 'after:http']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
