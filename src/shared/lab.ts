import { z } from 'zod';
import { checkNameSchema, crashPointSchema, faultKindSchema } from './report.ts';

const envName = z.string().regex(/^[A-Z][A-Z0-9_]*$/, 'must be an UPPER_SNAKE_CASE environment variable name');
const logicalName = z.string().regex(/^[a-z][a-z0-9-]*$/, 'must be lower-case letters, digits and dashes');

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

/** A record as the grader wrote it into an input topic. */
export interface SeedRecord {
  /** Logical topic name. */
  topic: string;
  partition: number;
  key: string;
  value: string;
  /** Position in the seeding order, unique per lab run. */
  index: number;
}

/** A record the program is expected to produce. */
export interface ExpectedRecord {
  topic: string;
  key: string;
  value: string;
}

export type SeedValueFn = (index: number, key: string) => string;

/** What a transform may look at besides its input: joins and aggregates depend on other inputs. */
export interface TransformContext {
  /** Every committed input record of the run, in seeding order. */
  committed: readonly SeedRecord[];
}

/**
 * The lab's function: which outputs an input must produce if it is committed (for aborted
 * inputs the grader calls it too, to recognise outputs that must not exist).
 */
export type TransformFn = (input: SeedRecord, context: TransformContext) => ExpectedRecord[];

/**
 * Names the input an output record was produced for (e.g. the orderId inside its value), or null.
 * For labs whose outputs depend on more than their own input (running totals): the grader then
 * decides loss, duplicates and aborted reads by origin, and transform-correct by value.
 */
export type OriginFn = (output: ExpectedRecord) => string | null;

const fn = <T>(what: string) => z.custom<T>((v) => typeof v === 'function', { message: `must be a function (${what})` });

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
      .describe('Every n-th seeding transaction is aborted, so a program that reads uncommitted input is caught'),
    value: fn<SeedValueFn>('(index, key) => string').optional().describe('Builds each record value; must embed the index so values are unique'),
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
  })
  .strict();
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
  .describe('kafkajs settings the lab runtime applies where the learner sets none; tell the learner in the lab text');
export type KafkajsDefaults = z.infer<typeof kafkajsDefaultsSchema>;

export const labDefinitionSchema = z
  .object({
    title: z.string().min(3).describe('Shown on the workbench'),
    summary: z.string().min(10).describe('One or two sentences: what the program must do'),
    env: z.array(envVarSchema).min(1).describe('The environment contract: every variable the program gets, KAFKA_BROKERS included'),
    topics: z.array(topicSpecSchema).min(1),
    seeds: z.array(seedSpecSchema).min(1).describe('How the grader writes the input'),
    transform: fn<TransformFn>('(input) => expected outputs'),
    origin: fn<OriginFn>('(output) => origin id | null')
      .optional()
      .describe('For outputs that are not a function of their input alone (aggregates): which input an output belongs to'),
    faults: z
      .object({
        full: z.array(faultSpecSchema).min(1).describe('The full fault plan: every fault fires once, in a seeded order'),
        quick: z.array(faultSpecSchema).min(1).describe('A shorter plan for `grade --quick`'),
      })
      .strict(),
    checks: z.array(checkNameSchema).min(1).describe('Checks that decide the verdict; zero checks is never a pass'),
    instances: z.number().int().min(1).max(6).default(1).describe('Instances running at once (each with its own identity slot)'),
    kafkajs: kafkajsDefaultsSchema.default({ consumer: {}, producer: {}, client: {} }),
    timeLimitMs: z.number().int().min(5_000).max(600_000).default(90_000).describe('Wall-clock limit of a full grade'),
    quickTimeLimitMs: z.number().int().min(5_000).max(600_000).default(40_000),
    /** Extra env the runtime gives, beyond topics, KAFKA_BROKERS, GROUP_ID and TRANSACTIONAL_ID. */
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
  })
  .strict();
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
    kafkajs: kafkajsDefaultsSchema,
    checks: z.array(checkNameSchema),
  })
  .strict();
export type LabInfo = z.infer<typeof labInfoSchema>;
