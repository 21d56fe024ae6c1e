/**
 * A pipeline grade whose checks all held is a pass only when everything it owed was tested
 * (lab-server/runner/pipeline/inconclusive.ts): every aimed fault landed, the program finished its
 * work before the time limit, and some fault landed inside a transaction.
 */
import { describe, expect, it } from 'vitest';
import { pipelineInconclusive } from '../../lab-server/runner/pipeline/inconclusive.ts';
import { decideVerdict } from '../../lab-server/runner/checkers/verdict.ts';

const tested = { owed: null, unfinished: null, faultInTransaction: true, decoyNote: '' };
const held = [{ name: 'no-duplicates' as const, passed: true, summary: 'no output record appears twice', evidence: [] }];

describe('a pipeline grade whose checks all held', () => {
  it('passes when its faults were owed nothing, it finished, and a fault hit a transaction', () => {
    expect(pipelineInconclusive(tested)).toBeNull();
  });

  it('is inconclusive when the time limit cut off work the program had left (a stage that never caught up hides what it would write)', () => {
    const message = pipelineInconclusive({ ...tested, unfinished: 'a later stage had not caught up with its input' });
    expect(message).toMatch(/time limit ended the grade before your program had finished \(a later stage had not caught up with its input\)/);
    expect(decideVerdict({ checks: held, inconclusive: message, passMessage: 'all held' }).verdict).toBe('inconclusive');
  });

  it('names an owed fault first, then unfinished work, then a missing transaction', () => {
    expect(pipelineInconclusive({ ...tested, owed: 'owed', unfinished: 'x', faultInTransaction: false })).toBe('owed');
    expect(pipelineInconclusive({ ...tested, unfinished: '3 of 9 inputs processed', faultInTransaction: false })).toMatch(/3 of 9 inputs processed/);
    expect(pipelineInconclusive({ ...tested, faultInTransaction: false, decoyNote: ' decoys.' })).toMatch(/no fault landed inside an open transaction.* decoys\.$/);
  });

  it('still fails on a failed check, unfinished or not', () => {
    const failed = [{ ...held[0]!, passed: false }];
    expect(decideVerdict({ checks: failed, inconclusive: pipelineInconclusive({ ...tested, unfinished: 'x' }), passMessage: '' }).verdict).toBe('fail');
  });
});
