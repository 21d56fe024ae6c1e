/**
 * The schemas of what a lab may put beside Kafka: a monitor's watched topic, the lab HTTP API and
 * the lab database, with the effects each committed input must leave there.
 */
import { z } from 'zod';
import { envName, fn, logicalName, type SeedRecord, type TransformContext } from './lab-records.ts';

/**
 * Monitoring labs (kind: 'monitor'): the learner's program watches the cluster and writes alerts
 * instead of transforming records. The grader runs a background workload of short transactions on
 * the watched topic, adds look-alikes that must NOT be reported (a slow transaction that commits in
 * time, a long one that blocks nobody, a hanging one on another team's topic), then leaves one
 * transaction open per 'hanging-transaction' fault and expects an alert naming it.
 */
export const monitorSpecSchema = z
  .object({
    watch: logicalName.describe('Logical name of the topic the monitor watches; the grader writes it (role "input")'),
    alerts: logicalName.describe('Logical name of the topic the monitor writes one JSON alert record to per finding (role "output")'),
    blockedLagThreshold: z
      .number()
      .int()
      .min(2)
      .max(100_000)
      .describe('Passed as BLOCKED_LAG_THRESHOLD: report a transaction only once HWM - LSO on a partition it blocks is at least this many offsets'),
    hangSeconds: z
      .number()
      .int()
      .min(2)
      .max(120)
      .describe('Passed as HANG_SECONDS: report a transaction only once it has been open at least this long'),
    reportWithinSeconds: z
      .number()
      .min(1)
      .max(60)
      .describe('How long after a hanging transaction crosses both thresholds its alert may take to appear'),
    workload: z
      .object({
        producers: z.number().int().min(1).max(6).default(3).describe('Transactional producers writing short committed transactions, each with its own transactional id'),
        pauseMs: z.number().int().min(20).max(5_000).default(150).describe('Pause of each producer between two transactions'),
        recordsPerPartition: z
          .number()
          .int()
          .min(1)
          .max(50)
          .default(4)
          .describe('Records each workload transaction writes to every busy partition: blocked lag grows fast even on a slow machine'),
        partitions: z
          .array(z.number().int().min(0))
          .min(1)
          .describe('Busy partitions of the watched topic; the others stay quiet (a long transaction there blocks nobody)'),
      })
      .strict()
      .describe('The background workload that keeps the watched topic busy'),
  })
  .strict();
export type MonitorSpec = z.infer<typeof monitorSpecSchema>;

/** One effect an input must cause on the lab HTTP API (see `api`). */
export interface ExpectedApiEffect {
  /** What identifies it on the API: a payment's paymentId; a ranking's `<campaignId>|<windowStart>|<windowEnd>`. */
  id: string;
  /** The body the effect must carry (for effects-correct); compared as JSON, field order aside. */
  body?: Record<string, unknown>;
}

/** Like `transform`, for the API: the effects a COMMITTED input must cause (several inputs may name the same id). */
export type ApiEffectsFn = (input: SeedRecord, context: TransformContext) => ExpectedApiEffect[];

/**
 * Labs whose program calls the lab HTTP API (lab-server/api): a payments / rankings service that
 * honours Idempotency-Key and records every effect it applies. The grader gives the program the
 * base URL of this attempt's API in `env`, can make the API slow, failing or silent (faults
 * api-slow, api-error, api-timeout) and counts the effects per id for the checks
 * no-duplicate-effects, no-lost-effects and effects-correct.
 */
export const apiSpecSchema = z
  .object({
    service: z
      .enum(['payments', 'rankings', 'saga'])
      .describe(
        'Which effects count: payments (POST /payments, one charge per call), rankings (POST /rankings and PUT /rankings/:campaignId/:windowStart/:windowEnd, upserts) ' +
          'or saga (an inventory and a card service: POST /inventory/reservations, POST /inventory/releases, POST /charges; effects named <step>:<orderId>, judged per saga by saga-outcome)',
      ),
    env: envName.default('API_URL').describe('Environment variable that carries the base URL of the attempt\'s API, e.g. http://127.0.0.1:41234/a/<attempt>'),
    effects: fn<ApiEffectsFn>('(input, context) => [{ id, body? }]').describe('The effects each committed input must cause, by id; aborted inputs must cause none'),
    what: z.string().min(2).max(40).default('effect').describe('What one effect is called in the report, e.g. "charge" or "ranking update"'),
    count: z
      .enum(['applied', 'changed'])
      .default('applied')
      .describe('applied: every application counts (a charge made twice is a duplicate); changed: only upserts that changed the stored value count (rewriting a ranking with the same count is harmless)'),
    faults: z
      .object({
        slowMs: z.number().int().min(100).max(30_000).default(3_000).describe('api-slow: how late each affected call is answered (the work waits too: a retry meanwhile gets 409)'),
        slowCalls: z.number().int().min(1).max(20).default(2).describe('api-slow: how many calls in a row are slow'),
        errorStatus: z.union([z.literal(500), z.literal(502), z.literal(503), z.literal(504)]).default(503).describe('api-error: the status answered, nothing applied'),
        errorCalls: z.number().int().min(1).max(20).default(1).describe('api-error: how many calls in a row fail'),
        timeoutHoldMs: z
          .number()
          .int()
          .min(1_000)
          .max(30_000)
          .default(20_000)
          .describe('api-timeout: the effect is applied, then the answer is held until the client gives up, or this long and then a 504'),
      })
      .strict()
      .prefault({})
      .describe('How the API faults behave in this lab'),
  })
  .strict();
export type ApiSpec = z.infer<typeof apiSpecSchema>;
/** The effect one committed input must leave in the lab's database (see databaseSpecSchema). */
export interface ExpectedEffectSpec {
  /** Identifies the effect: what the `effects` query returns as "id" (e.g. the order id). */
  id: string;
  /** What the `effects` query must return as "value" for it, when the lab checks effects-correct. */
  value?: string;
}
export type EffectFn = (input: SeedRecord) => ExpectedEffectSpec | null;

/**
 * Labs whose program writes to PostgreSQL. Each grade or run gets a database of its own (an
 * embedded PGlite, or a fresh database on the server named by the lab server's DATABASE_URL),
 * passed to the program as DATABASE_URL. The grader applies `schema` before the program starts,
 * and after the run reads one row per applied effect with `effects`, which decides
 * no-duplicate-effects, no-lost-effects (and effects-correct, no-aborted-reads when listed).
 */
export const databaseSpecSchema = z
  .object({
    schema: z
      .string()
      .min(1)
      .describe('SQL the grader runs in the fresh database before the program starts: the tables the program writes to (name them in the env contract)'),
    effects: z
      .string()
      .min(1)
      .describe(
        'SQL the grader runs after the run (and while it runs, to follow progress): one row per applied effect, with a column "id" (text) naming which, and for effects-correct a column "value" (text) to compare',
      ),
    effect: fn<EffectFn>('(input) => { id, value? } | null').describe(
      'The effect each committed input must leave (null: none); the grader calls it for aborted inputs too, to recognise effects that must not exist',
    ),
    what: z.string().min(1).default('row').describe('What one effect is called in the report, e.g. "order row"'),
  })
  .strict();
export type DatabaseSpec = z.infer<typeof databaseSpecSchema>;
