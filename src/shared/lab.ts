import { z } from 'zod';
import { checkNameSchema, crashPointSchema, faultKindSchema } from './report.ts';
import { envName, fn, logicalName, type OriginFn, type SeedValueFn, type TransformFn } from './lab-records.ts';
import { apiSpecSchema, databaseSpecSchema, monitorSpecSchema } from './lab-side-systems.ts';

export type { ExpectedRecord, OriginFn, SeedRecord, SeedTransactionInfo, SeedValueFn, TransformContext, TransformFn } from './lab-records.ts';
export { apiSpecSchema, databaseSpecSchema, monitorSpecSchema } from './lab-side-systems.ts';
export type { ApiEffectsFn, ApiSpec, DatabaseSpec, EffectFn, ExpectedApiEffect, ExpectedEffectSpec, MonitorSpec } from './lab-side-systems.ts';

export const labIdSchema = z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'lab ids are lower-case letters, digits and dashes').describe('The lab folder name under labs/');

export const envVarSchema = z
  .object({
    name: envName.describe('Environment variable the learner program reads'),
    description: z.string().min(1).describe('What it holds, shown beside the editor'),
  })
  .strict();
export type EnvVar = z.infer<typeof envVarSchema>;

export const topicSpecSchema = z
  .object({
    name: logicalName.describe('Logical name used inside the lab definition, e.g. "input"'),
    env: envName.describe('Environment variable that carries the real (namespaced) topic name'),
    partitions: z.number().int().min(1).max(12).describe('Partition count'),
    role: z.enum(['input', 'output', 'internal']).describe('input: seeded by the grader; output: verified; internal: between the stages of the program'),
    description: z.string().min(1),
    config: z
      .record(z.string(), z.string())
      .optional()
      .describe('Topic configs the grader creates the topic with, e.g. { "cleanup.policy": "compact" } for a changelog'),
  })
  .strict();
export type TopicSpec = z.infer<typeof topicSpecSchema>;


export const seedSpecSchema = z
  .object({
    topic: logicalName.describe('Logical name of the input topic to seed'),
    records: z.number().int().min(6).max(20_000).describe('How many records, committed and aborted together'),
    keys: z.number().int().min(1).max(1_000).default(12).describe('Distinct keys; a key always goes to the same partition'),
    transactionSize: z.number().int().min(1).max(500).default(5).describe('Records per seeding transaction'),
    abortEvery: z
      .number()
      .int()
      .min(2)
      .default(4)
      .describe('One seeding transaction in n is aborted (which ones, the grade\'s seed decides), so a program that reads uncommitted input is caught'),
    value: fn<SeedValueFn>('(index, key, transaction) => string')
      .optional()
      .describe('Builds each record value; must embed the index so values are unique. transaction says whether its seeding transaction commits'),
    holdOpen: z
      .object({
        transaction: z
          .union([z.number().int().min(1), z.literal('first-aborted')])
          .describe(
            "Which of this seed's transactions is held open: its ordinal (1 = the first; it keeps its planned outcome, commit or abort), or 'first-aborted' (the first one the grade's seed aborts)",
          ),
        holdMs: z.number().int().min(1_000).max(30_000).describe('How long it stays open while later transactions commit around it'),
      })
      .strict()
      .optional()
      .describe(
        'A long-open transaction, as a slow upstream job leaves: written by a second producer and ended only after holdMs, so read_committed readers stall at its first offset (the LSO) while read_uncommitted ones see its records at once',
      ),
  })
  .strict();
export type SeedSpec = z.infer<typeof seedSpecSchema>;

export const faultSpecSchema = z
  .object({
    kind: faultKindSchema,
    at: z
      .array(crashPointSchema)
      .default([])
      .describe('Crash points to choose from (seeded); empty: a seeded moment while the program is processing'),
    instance: z.number().int().min(1).default(1).describe('Which instance slot the fault hits'),
    occurrence: z
      .number()
      .int()
      .min(1)
      .max(20)
      .default(1)
      .describe('Fire at the n-th time the program reaches the crash point after the fault is armed (the program is idle then, so 1 is the first call of the next batch)'),
    topic: logicalName
      .optional()
      .describe(
        'Aims the crash point at one stage of a multi-stage program: only calls for writes to this topic count (a send to it; sendOffsets, commit or abort of a transaction that has sent to it; never a consumer commitOffsets)',
      ),
    path: z
      .string()
      .regex(/^(\/[a-z0-9-]+)+$/, 'a path of the lab API such as /inventory/releases: lower-case segments, no query')
      .optional()
      .describe(
        'Aims an HTTP crash point at one call of the lab API: only requests to this path (after API_URL, e.g. /inventory/releases) count for before:http, and their answers for after:http',
      ),
  })
  .strict()
  .refine((fault) => !fault.path || (fault.at.length > 0 && fault.at.every((point) => point === 'before:http' || point === 'after:http')), {
    message: 'path aims HTTP crash points only: every point in `at` must be before:http or after:http',
    path: ['path'],
  });
export type FaultSpec = z.infer<typeof faultSpecSchema>;

export const kafkajsDefaultsSchema = z
  .object({
    consumer: z
      .object({
        sessionTimeout: z.number().int().min(2_000).optional(),
        heartbeatInterval: z.number().int().min(100).optional(),
        rebalanceTimeout: z.number().int().min(1_000).optional(),
        maxWaitTimeInMs: z.number().int().min(10).optional(),
      })
      .strict()
      .default({}),
    producer: z.object({ transactionTimeout: z.number().int().min(1_000).optional() }).strict().default({}),
    client: z
      .object({
        retry: z
          .object({
            initialRetryTime: z.number().int().min(10).optional(),
            maxRetryTime: z.number().int().min(100).optional(),
            retries: z.number().int().min(0).max(50).optional(),
          })
          .strict()
          .optional(),
      })
      .strict()
      .default({}),
  })
  .strict()
  .describe('kafkajs settings the lab runtime applies where the learner sets none; the workbench lists each with the client default (src/shared/lab-facts.ts)');
export type KafkajsDefaults = z.infer<typeof kafkajsDefaultsSchema>;

/**
 * Performance labs: exactly once AND fast. In the same grade, before the fault plan, the grader
 * times a known-correct baseline program and then the learner's program on the same burst of
 * committed input (separate, namespaced topics, no faults), and the check `throughput-speedup`
 * compares the two rates. Timing both on the same machine within seconds of each other keeps
 * the verdict stable on slow or busy machines.
 */
export const throughputSpecSchema = z
  .object({
    baseline: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9_-]*\.ts$/, 'must be a .ts file name in the lab folder, e.g. "baseline.ts"')
      .describe('A correct program in the lab folder that the learner is measured against (e.g. one transaction per record); never shown as the solution'),
    records: z
      .number()
      .int()
      .min(10)
      .max(5_000)
      .describe('Records in the burst each program processes (per input seed), written at once in one committed transaction'),
    minSpeedup: z
      .number()
      .min(1)
      .max(1_000)
      .describe("The check passes when the learner's records/s is at least this multiple of the baseline's records/s"),
  })
  .strict();
export type ThroughputSpec = z.infer<typeof throughputSpecSchema>;


/**
 * The coverage rule (`kafkaiq check`, tests/unit/coverage.test.ts): every check a lab lists must be
 * failed by at least one of its fixtures, or be declared here as one that cannot fail in this lab.
 */
export const checkCoverageSchema = z
  .object({
    check: checkNameSchema.describe('A check from `checks`'),
    coverage: z.literal('none').describe('No fixture fails this check, on purpose'),
    reason: z
      .string()
      .min(10)
      .max(240)
      .regex(/^[^\n]+$/, 'must be one line')
      .describe('One line saying why this check cannot fail in this lab; `kafkaiq labs` and the Labs page show it'),
  })
  .strict();
export type CheckCoverage = z.infer<typeof checkCoverageSchema>;

/**
 * A consumer group or transactional id the lab gives its program besides GROUP_ID and the
 * per-instance TRANSACTIONAL_ID. The attempt is granted exactly the names these expand to (LITERAL
 * ACLs, lab-server/kafka/attempt-names.ts): a program may use no other group or transactional id.
 */
export const kafkaIdSchema = z
  .object({
    name: z
      .string()
      .max(120)
      .regex(
        /^\{(GROUP_ID|TRANSACTIONAL_ID_PREFIX)\}(-([a-z0-9]+|\{partition\}|\{[A-Z][A-Z0-9_]*_TOPIC\}))*$/,
        'must start with {GROUP_ID} or {TRANSACTIONAL_ID_PREFIX}, then dash-separated parts: lower-case words, {partition} or a topic env such as {INPUT_TOPIC}',
      )
      .describe('The name as the program builds it from its env, e.g. "{GROUP_ID}-sender" or "{TRANSACTIONAL_ID_PREFIX}-{INPUT_TOPIC}-{partition}"'),
    perPartitionOf: logicalName
      .optional()
      .describe('One name per partition of this topic: {partition} becomes 0, 1, ... (required exactly when the name has {partition})'),
  })
  .strict();
export type KafkaIdSpec = z.infer<typeof kafkaIdSchema>;

export const kafkaIdsSchema = z
  .object({
    groups: z
      .array(kafkaIdSchema)
      .max(8)
      .default([])
      .describe('Consumer groups besides GROUP_ID (a second stage, a relay, a restore reader); each name a fixed one, never a time or a random value'),
    transactionalIds: z
      .array(kafkaIdSchema)
      .max(8)
      .optional()
      .describe(
        'Transactional ids besides TRANSACTIONAL_ID (one per instance slot, always granted when env lists it), e.g. one producer per input partition. ' +
          'Default: when env lists TRANSACTIONAL_ID_PREFIX, "{TRANSACTIONAL_ID_PREFIX}-<input topic env>-{partition}" per partition of each input topic; otherwise none',
      ),
  })
  .strict()
  .describe('Which consumer groups and transactional ids the program may use: the attempt is granted exactly these names, nothing by prefix');
export type KafkaIdsSpec = z.infer<typeof kafkaIdsSchema>;

/** Fields every lab kind has. */
const labCommonShape = {
  title: z.string().min(3).describe('Shown on the workbench'),
  summary: z.string().min(10).describe('One or two sentences: what the program must do'),
  env: z.array(envVarSchema).min(1).describe('The environment contract: every variable the program gets, KAFKA_BROKERS included'),
  topics: z.array(topicSpecSchema).min(1),
};

/** Fields every lab kind has, after the kind's own inputs (the order zod reports problems in). */
const labLimitsShape = {
  faults: z
    .object({
      full: z.array(faultSpecSchema).min(1).describe('The full fault plan: every fault fires once, in a seeded order'),
      quick: z.array(faultSpecSchema).min(1).describe('A shorter plan for `grade --quick`'),
    })
    .strict(),
  checks: z.array(checkNameSchema).min(1).describe('Checks that decide the verdict; zero checks is never a pass'),
  checkCoverage: z
    .array(checkCoverageSchema)
    .default([])
    .describe("Checks no fixture of this lab can fail, each with coverage: 'none' and why (every other check needs a fixture that fails it)"),
  instances: z.number().int().min(1).max(6).default(1).describe('Instances running at once (each with its own identity slot)'),
  kafkaIds: kafkaIdsSchema.prefault({}),
  kafkajs: kafkajsDefaultsSchema.default({ consumer: {}, producer: {}, client: {} }),
  timeLimitMs: z.number().int().min(5_000).max(600_000).default(90_000).describe('Wall-clock limit of a full grade'),
  quickTimeLimitMs: z.number().int().min(5_000).max(600_000).default(40_000),
  cluster: z.enum(['single', 'three-nodes']).default('single').describe('Which broker setup the lab needs'),
  commandFixtures: z
    .array(
      z
        .object({
          name: z.string().regex(/^[a-z0-9-]+$/),
          command: z.string().min(1).describe('Run through /bin/sh from the project root with the lab env, e.g. a Java reference'),
          expect: z.enum(['pass', 'fail']),
          check: checkNameSchema.optional().describe('For expect: fail, the check it must fail'),
        })
        .strict(),
    )
    .default([])
    .describe('Extra programs `kafkaiq check` grades with --cmd: references written in other languages, known-bad pipelines'),
};

/** A pipeline lab (the default kind): the program transforms input records the grader seeds. */
export const pipelineLabSchema = z
  .object({
    ...labCommonShape,
    seeds: z.array(seedSpecSchema).default([]).describe('How the grader writes the input (pipeline labs need at least one)'),
    transform: fn<TransformFn>('(input) => expected outputs')
      .default(() => () => [])
      .describe('What each committed input must produce'),
    origin: fn<OriginFn>('(output) => origin id | null')
      .optional()
      .describe('For outputs that are not a function of their input alone (aggregates): which input an output belongs to'),
    ...labLimitsShape,
    throughput: throughputSpecSchema
      .optional()
      .describe('Measure the learner against a baseline program before the faults; requires the check "throughput-speedup" (and vice versa)'),
    kind: z
      .literal('pipeline')
      .default('pipeline')
      .describe('pipeline: the program transforms input records (seeds, transform, crash-point faults)'),
    api: apiSpecSchema
      .optional()
      .describe('The program calls the lab HTTP API: its URL env, how inputs map to expected effects, the API faults; enables the effect checks and api-* faults'),
    database: databaseSpecSchema
      .optional()
      .describe('The program writes to PostgreSQL: the schema the grader creates and how it reads the effects back (DATABASE_URL)'),
  })
  .strict();

/** A monitor lab: the program watches the cluster and writes alerts (see `monitor`). */
export const monitorLabSchema = z
  .object({
    ...labCommonShape,
    ...labLimitsShape,
    kind: z.literal('monitor').describe('monitor: the program watches the cluster and writes alerts (see `monitor`)'),
    monitor: monitorSpecSchema.describe('What is watched, the thresholds and the background workload'),
  })
  .strict();

/** A lab definition: one schema per lab kind, told apart by `kind` (pipeline when left out). */
export const labDefinitionSchema = z.discriminatedUnion('kind', [pipelineLabSchema, monitorLabSchema]);
export type PipelineLab = z.output<typeof pipelineLabSchema>;
export type MonitorLab = z.output<typeof monitorLabSchema>;
export type LabKind = LabDefinition['kind'];
export type LabDefinitionInput = z.input<typeof labDefinitionSchema>;
export type LabDefinition = z.output<typeof labDefinitionSchema>;

/** Authoring helper: gives lab.ts files types and completion. Validation happens at load time. */
export function defineLab(definition: LabDefinitionInput): LabDefinitionInput {
  return definition;
}

/** What the browser gets about a lab: prepared at build time, serialisable. */
export const labInfoSchema = z
  .object({
    id: labIdSchema,
    title: z.string(),
    summary: z.string(),
    env: z.array(envVarSchema),
    starter: z.string().describe('The starter program'),
    hints: z.string().describe('hints.md, as markdown'),
    clients: z
      .object({
        platformatic: z
          .object({ starter: z.string(), hints: z.string(), reference: z.boolean().describe('The lab folder has a reference solution in this client') })
          .strict()
          .optional(),
      })
      .strict()
      .default({})
      .describe("Starter and hints per client other than kafkajs (src/shared/clients.ts); the lab's own files where it has them"),
    kafkajs: kafkajsDefaultsSchema,
    checks: z.array(checkNameSchema),
  })
  .strict();
export type LabInfo = z.infer<typeof labInfoSchema>;
