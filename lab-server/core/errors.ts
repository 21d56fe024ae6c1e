/**
 * Every failure the product reports on purpose is a KafkaIqError: a stable code for programs
 * (checked with `instanceof` and `.code`, never by matching names or messages) and a one-line
 * message for people that says what went wrong and how to fix it.
 */
export type KafkaIqErrorCode =
  | 'JAVA_MISSING'
  | 'JAVA_TOO_OLD'
  | 'PORT_TAKEN'
  | 'JAR_FETCH_FAILED'
  | 'BROKER_START_FAILED'
  | 'BROKER_UNREACHABLE'
  | 'LAB_NOT_FOUND'
  | 'LAB_INVALID'
  | 'INVALID_INPUT'
  | 'COMPILE_FAILED'
  | 'LIMIT_EXCEEDED'
  | 'TIMEOUT'
  | 'INTERNAL';

/** Codes that mean our infrastructure failed, never the learner's program. */
const INFRASTRUCTURE_CODES: ReadonlySet<KafkaIqErrorCode> = new Set([
  'JAVA_MISSING',
  'JAVA_TOO_OLD',
  'PORT_TAKEN',
  'JAR_FETCH_FAILED',
  'BROKER_START_FAILED',
  'BROKER_UNREACHABLE',
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
  if (err instanceof KafkaIqError) return err.message;
  if (err instanceof Error) return err.message.split('\n')[0] ?? String(err);
  return String(err);
}
