/**
 * output-log-intact: records deleted from an output partition before verification (DeleteRecords,
 * which attempt users may not send, or retention after a flood) fail the grade with the offsets as
 * evidence, instead of hiding whatever was wrong with them. Here the grader's own super user plays
 * the attacker, on a correct program's output mid-grade.
 */
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { LABS_DIR } from '../../lab-server/core/paths.ts';
import { partitionOffsets } from '../../lab-server/kafka/inspect.ts';
import { loadLab } from '../../lab-server/labs/load-lab.ts';
import { createAttempt } from '../../lab-server/runner/attempt.ts';
import { checkOutputLogIntact } from '../../lab-server/runner/checkers/output-log-intact.ts';
import { testKafka } from '../support/kafka.ts';
import { namespace } from './tenancy-support.ts';
import { testBrokers } from '../support/brokers.ts';

const brokers = testBrokers();

describe('output-log-intact', () => {
  it('passes at log start 0 and fails with evidence above it (pure checker)', () => {
    expect(checkOutputLogIntact([{ topic: 'output', partition: 0, logStart: 0 }]).passed).toBe(true);
    const moved = checkOutputLogIntact([{ topic: 'output', partition: 0, logStart: 0 }, { topic: 'output', partition: 2, logStart: 17 }]);
    expect(moved.passed).toBe(false);
    expect(moved.evidence).toEqual(['output-2: log start offset 17 (records 0..16 were deleted before verification)']);
  });

  it('fails a grade whose output lost its first records mid-grade', async () => {
    const lab = await loadLab('single-stage');
    const code = fs.readFileSync(path.join(LABS_DIR, 'single-stage', 'solution.ts'), 'utf8');
    const ns = namespace('log-start');
    const quiet = { output: () => {}, diagnostics: () => {}, progress: () => {}, state: () => {}, fault: () => {} };
    const grade = createAttempt({ lab, program: { kind: 'code', code }, brokers, control: null, namespace: ns, mode: 'quick', listener: quiet }).grade();
    const output = `${ns}-output`;
    const admin = testKafka('log-start').admin();
    await admin.connect();
    try {
      // Wait for committed output on some partition, then delete it from under the grader.
      let victim: { partition: number; hwm: number } | undefined;
      for (let i = 0; i < 200 && !victim; i++) {
        victim = await partitionOffsets(brokers, output).then((ps) => ps.find((p) => p.lso > 0 && p.lso === p.hwm), () => undefined);
        if (!victim) await sleep(100);
      }
      expect(victim, 'the program never committed output').toBeDefined();
      await admin.fetchTopicMetadata({ topics: [output] });
      await admin.deleteTopicRecords({ topic: output, partitions: [{ partition: victim!.partition, offset: String(victim!.hwm) }] });
    } finally {
      await admin.disconnect();
    }
    const report = await grade;
    expect(report.verdict, report.message).toBe('fail');
    const check = report.checks.find((c) => c.name === 'output-log-intact');
    expect(check?.passed).toBe(false);
    expect(check?.evidence.join('\n')).toMatch(/output-\d+: log start offset [1-9]\d*/);
  }, 120_000);
});
