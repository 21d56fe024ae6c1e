/**
 * The saga lab's parts that need no broker: the two participants of the lab API (inventory and
 * card service, lab-server/api/saga-service.ts) over real HTTP, the saga-outcome check, and the lab
 * rule that ties the check to the service. The lab itself is graded in the lab matrix (tests/support/labs-matrix.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { labDefinitionSchema, pipelineLabSchema } from '../../src/shared/lab.ts';
import { LabApiServer, type ApiEffect, type ApiNamespace } from '../../lab-server/api/lab-api.ts';
import { apiLabProblems } from '../../lab-server/labs/api-rules.ts';
import { armFor } from '../../lab-server/runner/nemesis/api-faults.ts';
import { checkSagaOutcome } from '../../lab-server/runner/checkers/saga-outcome.ts';
import type { SeededRecord } from '../../lab-server/runner/seeder.ts';
import sagaLab from '../../labs/saga/lab.ts';

let server: LabApiServer;
let ns: ApiNamespace;
let counter = 0;

beforeAll(async () => {
  server = await LabApiServer.start();
});
afterAll(async () => {
  await server?.close();
});

const open = () => (ns = server.open(`saga-${++counter}`));
const post = async (path: string, body: unknown, key?: string) => {
  const res = await fetch(`${ns.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, replayed: res.headers.get('idempotent-replayed'), body: await res.json() };
};
const stock = (orderId: string) => ({ orderId, sku: 'SKU-BOLT', quantity: 2 });
const ids = () => ns.effects.map((e) => e.id);

describe('saga service', () => {
  it('reserves, charges and releases, one effect per step, named <step>:<orderId>', async () => {
    open();
    expect(await post('/inventory/reservations', stock('o1'), 'reserve:o1')).toMatchObject({ status: 201, body: { status: 'reserved' } });
    expect(await post('/charges', { orderId: 'o1', amountCents: 900, card: 'tok_visa' }, 'charge:o1')).toMatchObject({ status: 201, body: { status: 'charged' } });
    expect(await post('/inventory/reservations', stock('o2'), 'reserve:o2')).toMatchObject({ status: 201 });
    expect(await post('/inventory/releases', stock('o2'), 'release:o2')).toMatchObject({ status: 200, body: { released: 2 } });
    expect(ids()).toEqual(['reserve:o1', 'charge:o1', 'reserve:o2', 'release:o2']);
    expect(ns.effects.every((e) => e.service === 'saga')).toBe(true);
  });

  it('declines some cards with 402 and charges nothing; the decline is stored under the key', async () => {
    open();
    const declined = await post('/charges', { orderId: 'o1', amountCents: 900, card: 'tok_declined' }, 'charge:o1');
    expect(declined).toMatchObject({ status: 402, replayed: null, body: { error: 'card_declined' } });
    expect(await post('/charges', { orderId: 'o1', amountCents: 900, card: 'tok_declined' }, 'charge:o1')).toMatchObject({ status: 402, replayed: 'true' });
    expect(ids()).toEqual([]);
    expect(ns.calls.map((c) => c.outcome)).toEqual(['refused', 'replayed']);
  });

  it('holds stock again for every reservation without a key; a release with nothing held is a no-op', async () => {
    open();
    await post('/inventory/reservations', stock('o1'));
    await post('/inventory/reservations', stock('o1'));
    await post('/inventory/releases', stock('o1'));
    await post('/inventory/releases', stock('o1'));
    expect(await post('/inventory/releases', stock('o1'))).toMatchObject({ status: 200, body: { released: 0 } });
    expect(ids()).toEqual(['reserve:o1', 'reserve:o1', 'release:o1', 'release:o1']);
  });

  it('refuses a movement that contradicts the hold (409) and frees its key', async () => {
    open();
    await post('/inventory/reservations', stock('o1'), 'reserve:o1');
    const other = { ...stock('o1'), quantity: 5 };
    expect((await post('/inventory/reservations', other, 'reserve:o1-again')).body.error).toBe('reservation_mismatch');
    // The refused request left no in-progress key behind: the key is free for another request.
    expect(await post('/inventory/reservations', stock('o3'), 'reserve:o1-again')).toMatchObject({ status: 201, replayed: null });
    expect((await post('/inventory/releases', other)).body.error).toBe('release_mismatch');
    expect(ids()).toEqual(['reserve:o1', 'reserve:o3']);
  });

  it('api-timeout holds the answer of a step that applied, not of a decline', async () => {
    open();
    ns.arm({ ...armFor('api-timeout', pipelineLabSchema.parse(sagaLab).api!, 1), holdMs: 1_000 });
    const declined = await post('/charges', { orderId: 'o1', amountCents: 900, card: 'tok_declined' }, 'charge:o1');
    expect(declined.status).toBe(402); // answered at once: nothing was applied, nothing to lose
    const started = Date.now();
    const held = await post('/inventory/reservations', stock('o2'), 'reserve:o2');
    expect(held.status).toBe(504);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(ids()).toEqual(['reserve:o2']);
  });
});

// ---- saga-outcome -----------------------------------------------------------------------------

const lab = pipelineLabSchema.parse(sagaLab);
const seedValue = lab.seeds[0]!.value!;
const order = (index: number, committed = true): SeededRecord => ({ topic: 'orders', partition: 0, key: 'k', value: seedValue(index, 'k', { ordinal: 1, committed }), index, committed, offset: index });
const orderId = (index: number) => `ord-${String(index).padStart(5, '0')}`;
let seq = 0;
const effect = (step: 'reserve' | 'charge' | 'release', index: number): ApiEffect => ({
  seq: ++seq,
  at: seq,
  service: 'saga',
  method: 'POST',
  path: `/${step}`,
  key: `${step}:${orderId(index)}`,
  id: `${step}:${orderId(index)}`,
  body: {},
  changed: true,
});

describe('saga-outcome', () => {
  // ord-00002 pays with an accepted card, ord-00003 with a declined one (see labs/saga/lab.ts).
  const inputs = [order(2), order(3), order(4), order(6, false)];

  it('passes completed and compensated sagas, and ignores orders that never started', () => {
    const result = checkSagaOutcome({ api: lab.api!, inputs, effects: [effect('reserve', 2), effect('charge', 2), effect('reserve', 3), effect('release', 3)] });
    expect(result).toMatchObject({ name: 'saga-outcome', passed: true });
    expect(result.summary).toBe('all 2 started sagas ended completed (1) or fully compensated (1), each step applied once');
  });

  it('names each saga that ended half done, twice, in the wrong order or the wrong way', () => {
    const result = checkSagaOutcome({
      api: lab.api!,
      inputs,
      effects: [
        effect('reserve', 2), // accepted card: reserved, never charged
        effect('release', 3), // declined card: released before it was reserved
        effect('reserve', 3),
        effect('reserve', 4), // accepted card: reserved twice
        effect('reserve', 4),
        effect('charge', 4),
        effect('reserve', 6), // an aborted order: no-duplicate-effects' to report
      ],
    });
    expect(result.passed).toBe(false);
    expect(result.summary).toBe('3 of 3 started sagas did not end completed or fully compensated');
    expect(result.evidence).toEqual([
      'ord-00002: reserve x1, charge x0, release x0: neither completed nor compensated',
      'ord-00003: reserve x1, charge x0, release x1: released before it was reserved',
      'ord-00004: reserve x2, charge x1, release x0: a step applied more than once',
    ]);
    const wrongWay = checkSagaOutcome({ api: lab.api!, inputs, effects: [effect('reserve', 2), effect('release', 2)] });
    expect(wrongWay.evidence).toEqual(['ord-00002: reserve x1, charge x0, release x1: compensated, but its card is accepted, so the saga had to complete']);
  });
});

describe('saga lab rules', () => {
  it('ties saga-outcome to the saga service', () => {
    expect(apiLabProblems(lab)).toEqual([]);
    const payments = labDefinitionSchema.parse({ ...sagaLab, api: { ...lab.api!, service: 'payments' } });
    expect(apiLabProblems(payments)).toContain('checks: "saga-outcome" needs api.service "saga"');
  });
});
