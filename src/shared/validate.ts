import type { z } from 'zod';
import { KafkaIqError, type KafkaIqErrorCode } from './errors.ts';

/**
 * Validates data crossing a boundary (a lab file, a WebSocket message, a report) and turns zod's
 * issues into one readable line that names the bad path, e.g.
 * `Invalid lab "single-stage": topics[1].partitions: expected a number, got "3"`.
 */
export function parseWithFriendlyErrors<S extends z.ZodType>(
  schema: S,
  input: unknown,
  context: string,
  code: KafkaIqErrorCode = 'INVALID_INPUT',
): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issues = result.error.issues.slice(0, 3).map((issue) => {
    const where = issue.path.length ? formatPath(issue.path) : '(root)';
    return `${where}: ${issue.message}`;
  });
  const more = result.error.issues.length > 3 ? ` (+${result.error.issues.length - 3} more)` : '';
  throw new KafkaIqError(code, `${context}: ${issues.join('; ')}${more}`);
}

function formatPath(path: PropertyKey[]): string {
  return path
    .map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? String(part) : `.${String(part)}`))
    .join('');
}
