/**
 * Issue 27, class 6: the lab API keeps bounded state per attempt. A program that creates effects
 * and idempotency keys as fast as it can (tests/security/attacks/flood-lab-api.ts) gets 429 with
 * Retry-After and a JSON error past the bound (src/shared/api-limits.ts, the defaults), nothing more
 * is kept, and this process's heap, which hosts the API, stays bounded while it keeps trying.
 * Beside it, the http-idempotency reference solution's quick grade still passes.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { LABS_DIR, ROOT_DIR } from '../../lab-server/core/paths.ts';
import { labApi } from '../../lab-server/api/lab-api.ts';
import { gradeProgram } from '../../lab-server/runner/check-labs.ts';
import { DEFAULT_API_STATE_LIMITS } from '../../src/shared/api-limits.ts';
import { formatLabFacts } from '../../src/shared/lab-facts.ts';
import { loadLabFacts } from '../../lab-server/labs/coverage.ts';
import { testBrokers } from '../support/brokers.ts';

const brokers = testBrokers();

/** Runs the flood program against a namespace URL; returns its RESULT. */
function flood(url: string, env: Record<string, string> = {}): Promise<{ allowed: boolean; applied: number; refused: number; first429: { status: number; retryAfter: string | null; body: { error: string; message: string } } }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT_DIR, 'tests/security/attacks/flood-lab-api.ts')], {
    cwd: ROOT_DIR,
    env: { ...process.env, API_URL: url, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => {
    child.on('exit', () => {
      const line = out.split('\n').find((l) => l.startsWith('RESULT '));
      if (line) resolve(JSON.parse(line.slice('RESULT '.length)));
      else reject(new Error(`the flood printed no RESULT:\n${out.slice(-2000)}\n${err.slice(-2000)}`));
    });
  });
}

const heapMb = () => {
  globalThis.gc?.();
  return process.memoryUsage().heapUsed / 1024 / 1024;
};

describe('the lab API under a flood of effects and keys', () => {
  it('answers 429 with Retry-After and a JSON error past the default bound, keeps nothing more, and the heap stays bounded', async () => {
    const api = await labApi();
    const ns = api.open(`kiq-flood-${process.pid}`);
    try {
      const before = heapMb();
      const result = await flood(ns.baseUrl, { FLOOD_AFTER_REFUSED: '200' });
      expect(result.allowed).toBe(false);
      expect(result.first429.status).toBe(429);
      expect(result.first429.retryAfter).toBe(String(DEFAULT_API_STATE_LIMITS.retryAfterSeconds));
      expect(result.first429.body.error).toBe('too_much_state');
      expect(result.first429.body.message).toMatch(/bound .*429/);
      const full = ns.usage;
      // One bound or the other was reached, and none was passed.
      expect(full.effects).toBeLessThanOrEqual(DEFAULT_API_STATE_LIMITS.maxEffects);
      expect(full.keys).toBeLessThanOrEqual(DEFAULT_API_STATE_LIMITS.maxKeys);
      expect(full.bytes).toBeLessThanOrEqual(DEFAULT_API_STATE_LIMITS.maxBytes);
      expect(full.effects === DEFAULT_API_STATE_LIMITS.maxEffects || full.keys === DEFAULT_API_STATE_LIMITS.maxKeys || full.bytes > DEFAULT_API_STATE_LIMITS.maxBytes - 4096).toBe(true);
      expect(result.applied).toBe(full.effects);
      const atBound = heapMb();

      // It keeps trying as fast as it can: every request is refused, nothing is kept, the heap does not grow.
      const again = await flood(ns.baseUrl, { FLOOD_AFTER_REFUSED: '5000' });
      expect(again.applied).toBe(0);
      expect(again.refused).toBeGreaterThanOrEqual(5_000);
      expect(ns.usage).toEqual(full);
      const after = heapMb();
      // What the full namespace holds, and no more: the bytes bound plus the kept calls' bookkeeping.
      expect(atBound - before, `heap ${before.toFixed(0)} -> ${atBound.toFixed(0)} MB at the bound`).toBeLessThan((DEFAULT_API_STATE_LIMITS.maxBytes / 1024 / 1024) * 4 + 64);
      expect(after - atBound, `heap ${atBound.toFixed(0)} -> ${after.toFixed(0)} MB while refused`).toBeLessThan(48);
      expect(ns.refusedOverBound).toBeGreaterThanOrEqual(5_200);
      console.log(`lab API flood: ${full.effects} effects, ${full.keys} keys, ${(full.bytes / 1024 / 1024).toFixed(1)} MB kept; heap ${before.toFixed(0)} -> ${atBound.toFixed(0)} -> ${after.toFixed(0)} MB`);
    } finally {
      ns.close();
    }
  }, 240_000);

  it('is a lab fact of every lab that calls the API', async () => {
    const facts = formatLabFacts(await loadLabFacts('http-idempotency'));
    expect(facts).toMatch(/lab API: at most 50,000 effects, 50,000 idempotency keys and 32 MB of them per attempt; past that the API answers 429/);
    expect(formatLabFacts(await loadLabFacts('single-stage'))).not.toMatch(/lab API:/);
  });

  it('leaves the reference solution of http-idempotency passing (quick)', async () => {
    const code = fs.readFileSync(path.join(LABS_DIR, 'http-idempotency', 'solution.ts'), 'utf8');
    const report = await gradeProgram({ brokers, control: null }, 'http-idempotency', { kind: 'code', code }, { quick: true });
    expect(report.verdict, report.message).toBe('pass');
  }, 240_000);
});
