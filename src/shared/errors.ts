/**
 * The one error base class of the product, shared by the lab server and the browser islands.
 * Programs branch on `instanceof KafkaIqError` and `.code`; people read `.message`, a single line
 * that says what went wrong and how to fix it.
 */
export const ERROR_CODES = [
  'JAVA_MISSING',
  'JAVA_TOO_OLD',
  'PORT_TAKEN',
  'JAR_FETCH_FAILED',
  'BROKER_START_FAILED',
  'BROKER_UNREACHABLE',
  'DATABASE_UNAVAILABLE',
  'LAB_NOT_FOUND',
  'LAB_INVALID',
  'INVALID_INPUT',
  'COMPILE_FAILED',
  'LIMIT_EXCEEDED',
  'BUSY',
  'TIMEOUT',
  'INTERNAL',
] as const;
export type KafkaIqErrorCode = (typeof ERROR_CODES)[number];

/** Codes that mean our infrastructure failed, never the learner's program. */
const INFRASTRUCTURE_CODES: ReadonlySet<KafkaIqErrorCode> = new Set([
  'JAVA_MISSING',
  'JAVA_TOO_OLD',
  'PORT_TAKEN',
  'JAR_FETCH_FAILED',
  'BROKER_START_FAILED',
  'BROKER_UNREACHABLE',
  'DATABASE_UNAVAILABLE',
  'INTERNAL',
]);

export class KafkaIqError extends Error {
  readonly code: KafkaIqErrorCode;

  constructor(code: KafkaIqErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KafkaIqError';
    this.code = code;
  }

  get isInfrastructure(): boolean {
    return INFRASTRUCTURE_CODES.has(this.code);
  }
}

/** One line for a person, whatever was thrown. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message.split('\n')[0] ?? String(err);
  return String(err);
}
