/**
 * What a lab's functions see and return (a seeded record, an expected output, the transaction it
 * went into) and the name rules every lab schema shares. Split from lab.ts so the schemas of the
 * systems beside Kafka (lab-side-systems.ts) can use them without a cycle.
 */
import { z } from 'zod';

export const envName = z.string().regex(/^[A-Z][A-Z0-9_]*$/, 'must be an UPPER_SNAKE_CASE environment variable name');
export const logicalName = z.string().regex(/^[a-z][a-z0-9-]*$/, 'must be lower-case letters, digits and dashes');

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

/** The seeding transaction a record goes into, known before its value is built. */
export interface SeedTransactionInfo {
  /** Its position among its seed's transactions, 1 = the first. */
  ordinal: number;
  /**
   * Whether it commits. Which transactions abort depends on the grade's seed (a seeded phase),
   * so a value that must differ in aborted transactions (a lab whose aborted data must leave a
   * trace a reader of uncommitted data cannot undo) is built from this, never from the ordinal.
   */
  committed: boolean;
}

export type SeedValueFn = (index: number, key: string, transaction: SeedTransactionInfo) => string;

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

export const fn = <T>(what: string) => z.custom<T>((v) => typeof v === 'function', { message: `must be a function (${what})` });
