/**
 * Schema errors in one line (src/shared/validate.ts), as the author of a bad lab definition sees them.
 */
import { describe, expect, it } from 'vitest';
import { KafkaIqError } from '../../src/shared/errors.ts';
import { labDefinitionSchema } from '../../src/shared/lab.ts';
import { parseWithFriendlyErrors } from '../../src/shared/validate.ts';

describe('lab definitions', () => {
  it('names the bad field in one line', () => {
    const bad = { title: 'x', summary: 'too short' };
    let error: unknown;
    try {
      parseWithFriendlyErrors(labDefinitionSchema, bad, 'Invalid lab "demo"', 'LAB_INVALID');
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(KafkaIqError);
    expect((error as KafkaIqError).code).toBe('LAB_INVALID');
    expect((error as KafkaIqError).message).toMatch(/^Invalid lab "demo": title: .*3/);
    expect((error as KafkaIqError).message.split('\n')).toHaveLength(1);
  });
});
