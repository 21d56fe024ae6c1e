/**
 * A seed the learner chooses replays a grade whose faults (and input) are known in advance: the
 * report says "replay, not counted", and the attempt store never counts it as a passed lab.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { LABS_DIR } from '../../lab-server/core/paths.ts';
import { loadLab } from '../../lab-server/labs/load-lab.ts';
import { createAttempt } from '../../lab-server/runner/attempt.ts';
import { openAttemptStore } from '../../lab-server/server/attempt-store.ts';
import { namespace } from './tenancy-support.ts';
import { testBrokers } from '../support/brokers.ts';

const brokers = testBrokers();
const quiet = { output: () => {}, diagnostics: () => {}, progress: () => {}, state: () => {}, fault: () => {} };

describe('replaying a seed for credit', () => {
  it('is a replay in the report and does not count toward passed labs', async () => {
    const lab = await loadLab('single-stage');
    const code = fs.readFileSync(path.join(LABS_DIR, 'single-stage', 'solution.ts'), 'utf8');
    const grade = (seed?: number) =>
      createAttempt({ lab, program: { kind: 'code', code }, brokers, control: null, namespace: namespace('replay'), mode: 'quick', listener: quiet, ...(seed === undefined ? {} : { seed }) }).grade();
    const [replayed, fresh] = await Promise.all([grade(1234), grade()]);
    expect(replayed.verdict, replayed.message).toBe('pass');
    expect(replayed.replay).toBe(true);
    expect(replayed.message).toMatch(/Replay of seed 1234: not counted toward passed labs/);
    expect(fresh.verdict, fresh.message).toBe('pass');
    expect(fresh.replay).toBeUndefined();

    // Quick grades never count; the same reports as full grades show the rule itself.
    const store = openAttemptStore({ file: path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'kiq-store-')), 'attempts.db') });
    await store.save('learner-a', { ...replayed, quick: false });
    expect((await store.history('learner-a')).passedLabs).toEqual([]);
    await store.save('learner-a', { ...fresh, quick: false });
    expect((await store.history('learner-a')).passedLabs).toEqual(['single-stage']);
  }, 120_000);
});
