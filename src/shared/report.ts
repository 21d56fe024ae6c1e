import { z } from 'zod';

/** Bumped whenever a field changes meaning; readers reject versions they do not know. */
export const REPORT_VERSION = 1;

export const CHECK_NAMES = [
  'no-loss',
  'no-duplicates',
  'no-aborted-reads',
  'transform-correct',
  'order-preserved',
  'atomic-fan-out',
  'offsets-consistent',
  'no-hanging-transactions',
  // Monitoring labs: the learner's program watches the cluster instead of transforming records.
  'hanging-transaction-reported',
  'no-false-alarms',
  // Performance labs: exactly once and fast enough, against a baseline measured in the same run.
  'throughput-speedup',
  // External systems (a database, an HTTP API): effects counted on the other side, per input.
  'no-duplicate-effects',
  'no-lost-effects',
  'effects-correct',
  'no-transaction-timeouts',
  // Liveness: input waiting, nothing holding the program back, and no progress for too long.
  'keeps-up',
  // Grading integrity, judged in every grade: the output still starts at offset 0.
  'output-log-intact',
  // Saga labs: every saga that started ended completed or fully compensated.
  'saga-outcome',
] as const;
export const checkNameSchema = z.enum(CHECK_NAMES).describe('A named property the grader verifies after the run');
export type CheckName = z.infer<typeof checkNameSchema>;

export const FAULT_KINDS = [
  'kill',
  'stop',
  'zombie',
  'pause',
  'join',
  'send-error',
  'broker-restart',
  'coordinator-kill',
  'hanging-transaction',
  'api-slow',
  'api-error',
  'api-timeout',
] as const;
export const faultKindSchema = z
  .enum(FAULT_KINDS)
  .describe(
    'kill: SIGKILL then restart with the same identity; stop: SIGTERM then restart; zombie: SIGSTOP, start a replacement with the same identity, then resume the paused one; ' +
      'pause: SIGSTOP for longer than the session timeout, so the group hands its partitions to the other instances, then resume it; ' +
      'join: a second instance joins (rebalance); send-error: the broker refuses the batch of the next send with a final error (INVALID_RECORD), so nothing of it is written; broker-restart: every broker stops cleanly and starts again; ' +
      'coordinator-kill: SIGKILL the broker that leads the transaction coordinator of the instance\'s transactional.id, then start it again; ' +
      'hanging-transaction: the grader opens a transaction and leaves it open (monitoring labs); ' +
      'api-slow: the lab HTTP API answers the next calls only after a delay; api-error: it answers 5xx without applying the effect; ' +
      'api-timeout: it applies the effect but the answer never arrives in time (the client times out)',
  );
export type FaultKind = z.infer<typeof faultKindSchema>;

/** The faults the lab HTTP API injects (lab-server/api): the grader arms them on the attempt's namespace. */
export const API_FAULT_KINDS = ['api-slow', 'api-error', 'api-timeout'] as const satisfies readonly FaultKind[];
export type ApiFaultKind = (typeof API_FAULT_KINDS)[number];
export const isApiFault = (kind: FaultKind): kind is ApiFaultKind => (API_FAULT_KINDS as readonly string[]).includes(kind);

export const CRASH_POINTS = [
  'before:send',
  'after:send',
  'before:sendOffsets',
  'after:sendOffsets',
  'before:commit',
  'after:commit',
  'before:abort',
  'after:abort',
  'before:commitOffsets',
  'after:commitOffsets',
  // External systems: a data-changing SQL statement (INSERT/UPDATE/DELETE), a SQL COMMIT, and an
  // HTTP call made with fetch (after = its response arrived).
  'before:db-write',
  'after:db-write',
  'before:db-commit',
  'after:db-commit',
  'before:http',
  'after:http',
] as const;
export const crashPointSchema = z
  .enum(CRASH_POINTS)
  .describe('A moment in the learner program, just before or just after one kafkajs, SQL or HTTP call, where a fault can be injected exactly');
export type CrashPoint = z.infer<typeof crashPointSchema>;

export const verdictSchema = z.enum(['pass', 'fail', 'inconclusive', 'error']).describe('pass: every check held and at least one fault hit an open transaction');
export type Verdict = z.infer<typeof verdictSchema>;

export const checkResultSchema = z
  .object({
    name: checkNameSchema,
    passed: z.boolean(),
    summary: z.string().describe('One line: what held or what broke, with counts'),
    evidence: z.array(z.string()).describe('topic-partition@offset, key, value and the fault that preceded it; at most a few dozen lines'),
  })
  .strict();
export type CheckResult = z.infer<typeof checkResultSchema>;

export const faultRecordSchema = z
  .object({
    atMs: z.number().describe('Milliseconds since the run started'),
    kind: faultKindSchema,
    instance: z.string().describe('Which instance it hit, e.g. "i1"; "broker" for broker faults'),
    crashPoint: crashPointSchema.optional().describe('The exact point in the program, when the fault was triggered by one'),
    inTransaction: z.boolean().nullable().describe('Whether the instance had a transaction open when the fault landed (null: unknown)'),
    aimedAt: z.array(crashPointSchema).optional().describe('The crash points the plan aimed this fault at (programs graded with our wrapper)'),
    landed: z
      .enum(['at-point', 'fallback'])
      .optional()
      .describe('at-point: it hit one of aimedAt; fallback: the program did not reach them in time, so it fired elsewhere (or at a seeded moment) and stays owed'),
    try: z.number().int().min(1).optional().describe('1 for the planned injection, 2 and up when an owed fault was armed again'),
    unannounced: z.literal(true).optional().describe("The plan's kill at a seeded moment: in no lab's fault list, aimed at no crash point"),
    producer: z
      .string()
      .max(249)
      .optional()
      .describe("The transactional.id of the producer whose call the fault held, as the grader's relay read it on the wire"),
    note: z.string().optional(),
  })
  .strict();
export type FaultRecord = z.infer<typeof faultRecordSchema>;

export const timelineEventSchema = z
  .object({
    atMs: z.number(),
    kind: z.enum(['start', 'exit', 'commit', 'abort', 'fault', 'wave']),
    instance: z.string(),
    detail: z.string().optional(),
  })
  .strict();
export type TimelineEvent = z.infer<typeof timelineEventSchema>;

export const gradeReportSchema = z
  .object({
    version: z.literal(REPORT_VERSION),
    lab: z.string(),
    verdict: verdictSchema,
    message: z.string().describe('One line explaining the verdict'),
    seed: z.number().int().describe('Replays the same fault plan with --seed'),
    replay: z.boolean().optional().describe('True when the caller chose the seed: a replay, never counted toward passed labs'),
    quick: z.boolean(),
    startedAt: z.string().describe('ISO time'),
    checks: z.array(checkResultSchema),
    faults: z.array(faultRecordSchema),
    timeline: z.array(timelineEventSchema),
    stats: z
      .object({
        inputs: z.number().int().describe('Committed input records the program had to process'),
        abortedInputs: z.number().int().describe('Input records written in aborted transactions'),
        outputs: z.number().int().describe('Committed output records'),
        abortedRecords: z.number().int().describe('Output records the program wrote in transactions that were aborted'),
        restarts: z.number().int().describe('Instance restarts: after faults and after exiting on its own'),
        selfExits: z.number().int().describe('Times an instance exited on its own and was restarted'),
        longestStallMs: z
          .number()
          .optional()
          .describe('Longest time input was waiting, no fault held the program back, and nothing moved (keeps-up judges it)'),
        outputBlockedMs: z
          .number()
          .optional()
          .describe('How long, at the end, read_committed readers of the output were held back by transactions of stopped instances until the broker resolved them'),
        durationMs: z.number(),
        phases: z
          .array(z.object({ name: z.string().max(80), ms: z.number() }).strict())
          .max(200)
          .optional()
          .describe('Where the grade\'s time went, in order: compiling, preparing, each fault from arming to the program catching up, settling, stopping, the wait for abandoned transactions, verifying'),
      })
      .strict(),
  })
  .strict();
export type GradeReport = z.infer<typeof gradeReportSchema>;

