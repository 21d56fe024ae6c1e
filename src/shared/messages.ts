/**
 * The WebSocket protocol between the workbench island and the lab server: one schema per
 * message, validated on both ends with parseWithFriendlyErrors.
 */
import { z } from 'zod';
import { ERROR_CODES } from './errors.ts';
import { kafkaClientSchema } from './clients.ts';
import { labIdSchema } from './lab.ts';
import { faultRecordSchema, gradeReportSchema } from './report.ts';

/** Largest program the server accepts (UTF-8 bytes). */
export const MAX_CODE_BYTES = 256 * 1024;
/** `consume` shows this many entries per partition unless told otherwise (--limit), at most MAX_CONSUME_LIMIT. */
export const DEFAULT_CONSUME_LIMIT = 20;
export const MAX_CONSUME_LIMIT = 200;
/** `sql`: the longest query text, and the most rows an answer carries. */
export const MAX_SQL_CHARS = 4_000;
export const MAX_SQL_ROWS = 50;
export const PROTOCOL_VERSION = 1;

const code = z
  .string()
  .refine((s) => new TextEncoder().encode(s).length <= MAX_CODE_BYTES, { message: `program is larger than ${MAX_CODE_BYTES / 1024} KB` })
  .describe('The learner program, TypeScript');

// ---- client -> server ------------------------------------------------------------------------

export const helloMessageSchema = z
  .object({
    type: z.literal('hello'),
    protocol: z.literal(PROTOCOL_VERSION),
    sessionId: z.string().regex(/^[A-Za-z0-9_-]{8,64}$/).describe('Kept in localStorage; names the learner namespace and their saved attempts'),
  })
  .strict();

export const runMessageSchema = z
  .object({ type: z.literal('run'), lab: labIdSchema, code })
  .strict()
  .describe('Run the program on a freshly seeded namespace without faults, until stopped');

export const gradeMessageSchema = z
  .object({
    type: z.literal('grade'),
    lab: labIdSchema,
    code,
    quick: z.boolean().default(false),
    seed: z.number().int().min(0).max(2 ** 31 - 1).optional(),
  })
  .strict();

export const stopMessageSchema = z.object({ type: z.literal('stop') }).strict();

export const MANUAL_FAULTS = ['kill', 'pause', 'resume', 'add-instance', 'broker-restart'] as const;
export const faultMessageSchema = z
  .object({
    type: z.literal('fault'),
    kind: z.enum(MANUAL_FAULTS),
    instance: z.string().regex(/^i\d+$/).optional().describe('Default: the first running instance'),
  })
  .strict();

export const inspectMessageSchema = z
  .object({
    type: z.literal('inspect'),
    command: z.discriminatedUnion('what', [
      z.object({ what: z.literal('topics') }).strict(),
      z
        .object({
          what: z.literal('consume'),
          topic: z.string().min(1).max(249),
          fromBeginning: z.boolean().default(true),
          isolation: z.enum(['read_committed', 'read_uncommitted']).default('read_committed'),
          from: z.number().int().min(0).optional().describe('First offset shown in each partition; default: the last `limit` entries of each partition'),
          limit: z.number().int().min(1).max(MAX_CONSUME_LIMIT).default(DEFAULT_CONSUME_LIMIT).describe('Entries shown per partition'),
          partition: z.number().int().min(0).max(999).optional().describe('Only this partition'),
        })
        .strict(),
      z.object({ what: z.literal('offsets'), topic: z.string().min(1).max(249) }).strict(),
      z.object({ what: z.literal('txns') }).strict(),
      z
        .object({
          what: z.literal('sql'),
          query: z.string().min(1).max(MAX_SQL_CHARS).describe("One SELECT (or WITH ... SELECT) against the latest attempt's database, run read-only"),
        })
        .strict(),
    ]),
  })
  .strict();

export const historyMessageSchema = z.object({ type: z.literal('history'), lab: labIdSchema.optional() }).strict();

export const attemptRequestMessageSchema = z
  .object({ type: z.literal('attempt'), id: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER) })
  .strict()
  .describe('One attempt of this session in full: its report and the program it graded');

export const solutionRequestMessageSchema = z
  .object({ type: z.literal('solution'), lab: labIdSchema, client: kafkaClientSchema.default('kafkajs') })
  .strict()
  .describe("The lab's reference solution: only after this session graded the lab; the reveal is recorded");

export const clientMessageSchema = z.discriminatedUnion('type', [
  helloMessageSchema,
  runMessageSchema,
  gradeMessageSchema,
  stopMessageSchema,
  faultMessageSchema,
  inspectMessageSchema,
  historyMessageSchema,
  attemptRequestMessageSchema,
  solutionRequestMessageSchema,
]);
export type ClientMessage = z.infer<typeof clientMessageSchema>;
export type InspectCommand = z.infer<typeof inspectMessageSchema>['command'];

// ---- server -> client ------------------------------------------------------------------------

/** up: serving; restarting: it died and is being started again; down: it could not be restarted. */
export const BROKER_STATES = ['up', 'restarting', 'down'] as const;

export const welcomeMessageSchema = z
  .object({
    type: z.literal('welcome'),
    protocol: z.literal(PROTOCOL_VERSION),
    sessionId: z.string(),
    brokers: z.string().describe('Bootstrap address, for display'),
    brokerFaults: z.boolean().describe('Whether broker restarts can be injected (false on an external cluster)'),
    broker: z.enum(BROKER_STATES).describe("The broker's health now (see the broker message)"),
    unsandboxed: z.string().nullable().describe('null when learner programs run in the sandbox; otherwise why they do not'),
  })
  .strict();

export const brokerStateMessageSchema = z
  .object({
    type: z.literal('broker'),
    state: z.enum(BROKER_STATES),
    detail: z.string().describe('What happened, for the badge (e.g. "node 1 exited (SIGKILL); restarting")'),
  })
  .strict()
  .describe('The broker the server supervises changed state: it restarts by itself, with backoff');

export const outputMessageSchema = z
  .object({
    type: z.literal('output'),
    instance: z.string().describe('"i1", "i2"... or "grader"'),
    stream: z.enum(['stdout', 'stderr', 'system']),
    line: z.string(),
  })
  .strict();

export const diagnosticSchema = z
  .object({
    line: z.number().int(),
    column: z.number().int(),
    message: z.string(),
    severity: z.enum(['error', 'warning']),
  })
  .strict();
export type Diagnostic = z.infer<typeof diagnosticSchema>;

export const diagnosticsMessageSchema = z
  .object({ type: z.literal('diagnostics'), diagnostics: z.array(diagnosticSchema) })
  .strict()
  .describe('Compile problems: type errors are reported but do not stop the run');

export const PHASES = ['compiling', 'preparing', 'running', 'settling', 'verifying', 'done'] as const;
export const progressMessageSchema = z
  .object({
    type: z.literal('progress'),
    mode: z.enum(['run', 'grade', 'quick']),
    phase: z.enum(PHASES),
    processed: z.number().int().describe('Input records accounted for so far'),
    expected: z.number().int().describe('Input records the program must process'),
    elapsedMs: z.number(),
    limitMs: z.number(),
    faultsDone: z.number().int(),
    faultsPlanned: z.number().int(),
  })
  .strict();
export type ProgressMessage = z.infer<typeof progressMessageSchema>;

export const instanceStateSchema = z
  .object({
    id: z.string(),
    state: z.enum(['starting', 'running', 'paused', 'exited']),
    incarnation: z.number().int(),
  })
  .strict();

export const stateMessageSchema = z
  .object({
    type: z.literal('state'),
    activity: z.enum(['idle', 'running', 'grading']),
    lab: labIdSchema.nullable(),
    instances: z.array(instanceStateSchema),
    topics: z.record(z.string(), z.string()).describe('Environment variable -> real topic name of the current namespace'),
    ids: z
      .record(z.string(), z.string())
      .optional()
      .describe("Environment variable -> this run's GROUP_ID, TRANSACTIONAL_ID_PREFIX and TRANSACTIONAL_ID (one per instance), those the lab's env lists"),
  })
  .strict();
export type StateMessage = z.infer<typeof stateMessageSchema>;

export const faultEventMessageSchema = z.object({ type: z.literal('fault'), fault: faultRecordSchema }).strict();

export const reportMessageSchema = z.object({ type: z.literal('report'), report: gradeReportSchema }).strict();

export const consumedRecordSchema = z
  .object({
    partition: z.number().int(),
    offset: z.number().int(),
    key: z.string().nullable(),
    value: z.string().nullable(),
    status: z.enum(['committed', 'aborted', 'open', 'marker']).describe('marker: a transaction commit/abort control record (no data)'),
  })
  .strict();
export type ConsumedRecord = z.infer<typeof consumedRecordSchema>;

export const partitionOffsetsRowSchema = z
  .object({
    partition: z.number().int(),
    logStart: z.number().int(),
    lso: z.number().int(),
    hwm: z.number().int(),
    committed: z.number().int().nullable().describe("The lab group's committed offset, if any"),
    blockedLag: z.number().int().describe('HWM - LSO: records hidden from read_committed readers by open transactions'),
  })
  .strict();

export const transactionRowSchema = z
  .object({
    transactionalId: z.string(),
    state: z.string(),
    producerId: z.number().int(),
    startedAt: z.string().nullable(),
    durationMs: z.number().nullable(),
    timeoutMs: z.number().nullable().describe("The producer's transaction.timeout.ms: the coordinator aborts the transaction once it has been open that long"),
    partitions: z.array(z.string()),
  })
  .strict();

export const inspectResultMessageSchema = z
  .object({
    type: z.literal('inspect-result'),
    result: z.discriminatedUnion('what', [
      z.object({ what: z.literal('topics'), topics: z.array(z.object({ name: z.string(), env: z.string().nullable(), partitions: z.number().int() }).strict()) }).strict(),
      z
        .object({
          what: z.literal('consume'),
          topic: z.string(),
          isolation: z.enum(['read_committed', 'read_uncommitted']),
          records: z.array(consumedRecordSchema),
          truncated: z.boolean(),
          omitted: z
            .array(z.object({ partition: z.number().int(), before: z.number().int(), after: z.number().int() }).strict())
            .optional()
            .describe('Per partition, entries left out before and after the window shown'),
          totals: z
            .object({ committed: z.number().int(), aborted: z.number().int(), open: z.number().int(), markers: z.number().int() })
            .strict()
            .optional()
            .describe('Entries of every partition read (shown or not), by status'),
        })
        .strict(),
      z.object({ what: z.literal('offsets'), topic: z.string(), partitions: z.array(partitionOffsetsRowSchema) }).strict(),
      z.object({ what: z.literal('txns'), transactions: z.array(transactionRowSchema) }).strict(),
      z
        .object({
          what: z.literal('sql'),
          columns: z.array(z.string()),
          rows: z.array(z.array(z.string().nullable())).describe('Cells as text (null for SQL NULL), each cut at a few hundred characters'),
          truncated: z.boolean().describe(`More than ${MAX_SQL_ROWS} rows matched`),
        })
        .strict(),
    ]),
  })
  .strict();
export type InspectResult = z.infer<typeof inspectResultMessageSchema>['result'];

export const attemptSummarySchema = z
  .object({
    id: z.number().int(),
    lab: z.string(),
    at: z.string(),
    verdict: z.enum(['pass', 'fail', 'inconclusive', 'error']),
    quick: z.boolean(),
    seed: z.number().int(),
    durationMs: z.number(),
    n: z.number().int().min(1).describe("The attempt's number among the learner's attempts of its lab (1 = the first)"),
    hasCode: z.boolean().describe('Whether the program it graded is still kept (the newest attempts of each lab keep theirs)'),
  })
  .strict();
export type AttemptSummary = z.infer<typeof attemptSummarySchema>;

export const solutionRevealSchema = z
  .object({
    lab: z.string(),
    at: z.string().describe('ISO time the reference solution was shown'),
    beforePass: z.boolean().describe('Shown before the learner had passed the lab (a full grade, not a replay)'),
  })
  .strict();
export type SolutionReveal = z.infer<typeof solutionRevealSchema>;

export const historyResultMessageSchema = z
  .object({
    type: z.literal('history'),
    lab: z.string().optional().describe('The lab the request named, if it named one'),
    attempts: z.array(attemptSummarySchema).describe('Newest first'),
    passedLabs: z.array(z.string()),
    reveals: z.array(solutionRevealSchema).default([]),
  })
  .strict();

export const attemptResultMessageSchema = z
  .object({
    type: z.literal('attempt'),
    summary: attemptSummarySchema,
    report: gradeReportSchema,
    code: z.string().nullable().describe('The program it graded; null once only the newest attempts keep theirs'),
  })
  .strict();

export const solutionResultMessageSchema = z
  .object({ type: z.literal('solution'), lab: z.string(), client: kafkaClientSchema, code: z.string(), reveal: solutionRevealSchema })
  .strict();

export const errorMessageSchema = z
  .object({ type: z.literal('error'), code: z.enum(ERROR_CODES), message: z.string().describe('One line naming the fix') })
  .strict();

export const queueMessageSchema = z
  .object({
    type: z.literal('queue'),
    position: z.number().int().min(0).describe('Place among the waiting grades (1 = next); 0 once the grade starts'),
  })
  .strict()
  .describe('The server grades a few programs at a time: where this grade waits');

export const serverMessageSchema = z.discriminatedUnion('type', [
  queueMessageSchema,
  welcomeMessageSchema,
  brokerStateMessageSchema,
  outputMessageSchema,
  diagnosticsMessageSchema,
  progressMessageSchema,
  stateMessageSchema,
  faultEventMessageSchema,
  reportMessageSchema,
  inspectResultMessageSchema,
  historyResultMessageSchema,
  attemptResultMessageSchema,
  solutionResultMessageSchema,
  errorMessageSchema,
]);
export type ServerMessage = z.infer<typeof serverMessageSchema>;
