/**
 * The one verdict function (runner/checkers/verdict.ts) and the one evidence cap: pure, no Kafka.
 */
import { describe, expect, it } from 'vitest';
import type { CheckName, CheckResult } from '../../src/shared/report.ts';
import { capEvidence, MAX_EVIDENCE } from '../../lab-server/runner/checkers/evidence.ts';
import { selectLabChecks } from '../../lab-server/runner/checkers/select.ts';
import { decideVerdict } from '../../lab-server/runner/checkers/verdict.ts';

const check = (name: CheckName, passed: boolean): CheckResult => ({ name, passed, summary: passed ? 'held' : 'failed', evidence: [] });
const base = { inconclusive: null, passMessage: 'All held.' };

describe('decideVerdict', () => {
  it('zero checks is never a pass: an error, whatever else is said', () => {
    expect(decideVerdict({ ...base, checks: [] })).toEqual({ verdict: 'error', message: 'No checks ran, so nothing was proven: the lab must name at least one check.' });
    expect(decideVerdict({ checks: [], inconclusive: 'x', passMessage: 'y' }).verdict).toBe('error');
  });

  it('fails on any failed check, naming them in the lab order, with the fail note', () => {
    const checks = [check('no-loss', false), check('no-duplicates', true), check('offsets-consistent', false)];
    expect(decideVerdict({ ...base, checks, failNote: ' The time limit was reached before all input was processed.' })).toEqual({
      verdict: 'fail',
      message: '2 of 3 checks failed: no-loss, offsets-consistent. The time limit was reached before all input was processed.',
    });
  });

  it('a failure outweighs an inconclusive set-up', () => {
    expect(decideVerdict({ checks: [check('no-loss', false)], inconclusive: 'no fault hit a transaction', passMessage: 'p' }).verdict).toBe('fail');
  });

  it('is inconclusive when every check held but nothing was really tested', () => {
    expect(decideVerdict({ checks: [check('no-loss', true)], inconclusive: 'no fault landed inside an open transaction', passMessage: 'p' })).toEqual({
      verdict: 'inconclusive',
      message: 'no fault landed inside an open transaction',
    });
  });

  it('excused failures do not fail the grade (they leave it inconclusive); others still do', () => {
    const checks = [check('hanging-transaction-reported', false), check('no-false-alarms', true)];
    expect(decideVerdict({ checks, excused: ['hanging-transaction-reported'], inconclusive: 'set-up failed', passMessage: 'p' }).verdict).toBe('inconclusive');
    const both = [check('hanging-transaction-reported', false), check('no-false-alarms', false)];
    expect(decideVerdict({ checks: both, excused: ['hanging-transaction-reported'], inconclusive: 'set-up failed', passMessage: 'p' })).toEqual({
      verdict: 'fail',
      message: '1 of 2 checks failed: no-false-alarms.',
    });
  });

  it('passes with the scenario\'s message when every check held and something was tested', () => {
    expect(decideVerdict({ ...base, checks: [check('no-loss', true), check('no-duplicates', true)] })).toEqual({ verdict: 'pass', message: 'All held.' });
  });
});

describe('capEvidence', () => {
  it('keeps up to MAX_EVIDENCE lines as they are', () => {
    const lines = Array.from({ length: MAX_EVIDENCE }, (_, i) => `line ${i}`);
    expect(capEvidence(lines)).toEqual(lines);
    expect(capEvidence([])).toEqual([]);
  });

  it('cuts longer evidence and says how much was left out', () => {
    const lines = Array.from({ length: MAX_EVIDENCE + 5 }, (_, i) => `line ${i}`);
    const capped = capEvidence(lines);
    expect(capped).toHaveLength(MAX_EVIDENCE + 1);
    expect(capped.at(-2)).toBe(`line ${MAX_EVIDENCE - 1}`);
    expect(capped.at(-1)).toBe('… and 5 more');
  });
});

describe('selectLabChecks', () => {
  it('keeps the checks the lab lists, in the lab\'s order, and drops the others', () => {
    const decided = [check('no-duplicates', true), check('no-loss', false), check('order-preserved', true)];
    expect(selectLabChecks(['no-loss', 'no-duplicates'], decided).map((c) => c.name)).toEqual(['no-loss', 'no-duplicates']);
  });

  it('leaves out a listed check nobody decided (so zero decided checks stays zero, an error)', () => {
    expect(selectLabChecks(['no-loss'], [])).toEqual([]);
    expect(decideVerdict({ checks: selectLabChecks(['no-loss'], []), inconclusive: null, passMessage: 'p' }).verdict).toBe('error');
  });
});
