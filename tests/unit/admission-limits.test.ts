/**
 * The lab server's admission limits: concurrent grades follow the machine's cores, an operator's
 * setting wins, and a malformed one is refused with the variable's name instead of lifting a limit.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, defaultLimits, GRADES_PER_CORE, limitsFromEnv } from '../../lab-server/server/admission.ts';

describe('admission limits', () => {
  it('run two grades at once per core, never fewer than two, and keep the other limits fixed', () => {
    expect(defaultLimits(2).concurrentGrades).toBe(4);
    expect(defaultLimits(8).concurrentGrades).toBe(8 * GRADES_PER_CORE);
    expect(defaultLimits(1).concurrentGrades).toBe(2);
    expect(defaultLimits(0.5).concurrentGrades).toBe(2);
    const { concurrentGrades: _grades, ...fixed } = defaultLimits(16);
    const { concurrentGrades: _fixedGrades, ...expected } = DEFAULT_LIMITS;
    expect(fixed).toEqual(expected);
  });

  it('take KAFKAIQ_MAX_GRADES over the cores, and refuse a value that is not a whole number from 1 to 10000', () => {
    expect(limitsFromEnv({}, 6).concurrentGrades).toBe(12);
    expect(limitsFromEnv({ KAFKAIQ_MAX_GRADES: '3' }, 6).concurrentGrades).toBe(3);
    expect(() => limitsFromEnv({ KAFKAIQ_MAX_GRADES: '4 grades' }, 6)).toThrow(/KAFKAIQ_MAX_GRADES must be a whole number from 1 to 10000, got "4 grades"/);
    expect(() => limitsFromEnv({ KAFKAIQ_MAX_GRADES: '0' }, 6)).toThrow(/KAFKAIQ_MAX_GRADES/);
  });
});
