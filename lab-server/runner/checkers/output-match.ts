/**
 * The derivation the output checks share: each output record matched with the input it belongs
 * to, and what every committed and aborted input must (or must not) produce. Pure; computed once
 * per grade (memoize) however many output checks the lab lists.
 */
import type { ExpectedRecord, PipelineLab } from '../../../src/shared/lab.ts';
import type { SeededRecord } from '../seeder.ts';
import { memoize, type Collected, type GradeHistory, type PipelineCollected } from './contract.ts';
import type { ReadRecord } from '../../kafka/inspect.ts';

export type Expectation = { input: SeededRecord; expected: ExpectedRecord };

export interface OutputMatch {
  readonly pipeline: PipelineCollected;
  readonly lab: PipelineLab;
  /** How an output is matched with its input: exact (topic, key, value), or the lab's origin. */
  readonly matchKey: (r: { topic: string; key: string | null; value: string | null }) => string;
  readonly fromCommitted: Map<string, Expectation>;
  readonly fromAborted: Map<string, Expectation>;
  /** The exact (topic, key, value) of every expected output. */
  readonly expectedIdentities: Set<string>;
  /** Per committed input (its index): the match keys of its outputs. */
  readonly expectedPerInput: Map<number, string[]>;
  /** The committed output, by match key. */
  readonly actual: Map<string, ReadRecord[]>;
  readonly abortedRecords: number;
  /** `topic-partition@offset` with the logical topic name the learner knows. */
  label(r: ReadRecord): string;
  logical(realTopic: string): string;
  inputLabel(r: SeededRecord): string;
  /** " [after fault X on i1 at P, +n s]" for the fault that preceded a record, or "". */
  faultBefore(timestamp: number): string;
}

export const identity = (r: { topic: string; key: string | null; value: string | null }) => `${r.topic}\u0000${r.key}\u0000${r.value}`;
export const show = (v: string | null, max = 60) => (v === null ? 'null' : JSON.stringify(v.length > max ? `${v.slice(0, max)}…` : v));

export const outputMatch = memoize((collected: Collected, history: GradeHistory): OutputMatch | null => {
  const pipeline = collected.pipeline;
  if (!pipeline) return null;
  const { lab, realTopic, output } = pipeline;
  const logicalOf = new Map(lab.topics.map((t) => [realTopic(t.name), t.name]));
  const logical = (topic: string) => logicalOf.get(topic) ?? topic;
  const committedKeys = new Set(output.committed.map((r) => `${r.topic}/${r.partition}/${r.offset}`));
  const abortedRecords = output.uncommitted.filter((r) => !committedKeys.has(`${r.topic}/${r.partition}/${r.offset}`)).length;

  // How an output is matched with the input it belongs to: by its exact (topic, key, value), or,
  // for labs whose outputs depend on earlier inputs too (running totals), by the origin the lab
  // reads from the output (e.g. its orderId). Then a record counted twice is a duplicate and a
  // wrong total is a transform error, instead of both looking like an unknown record.
  const { origin } = lab;
  const matchKey = (r: { topic: string; key: string | null; value: string | null }): string => {
    if (!origin) return identity(r);
    let id: string | null = null;
    try {
      id = origin({ topic: logical(r.topic), key: r.key ?? '', value: r.value ?? '' });
    } catch {
      // An unreadable value has no origin; it is matched by its exact content.
    }
    return id === null ? identity(r) : `${r.topic}\u0000origin\u0000${id}`;
  };

  const fromCommitted = new Map<string, Expectation>();
  const fromAborted = new Map<string, Expectation>();
  const expectedIdentities = new Set<string>();
  const expectedPerInput = new Map<number, string[]>();
  const context = { committed: pipeline.inputs.filter((r) => r.committed) };
  for (const record of pipeline.inputs) {
    const outs = lab.transform(record, context);
    const real = outs.map((o) => ({ topic: realTopic(o.topic), key: o.key, value: o.value }));
    const ids = real.map(matchKey);
    outs.forEach((expected, i) => (record.committed ? fromCommitted : fromAborted).set(ids[i]!, { input: record, expected }));
    if (record.committed) {
      expectedPerInput.set(record.index, ids);
      for (const r of real) expectedIdentities.add(identity(r));
    }
  }
  const actual = new Map<string, ReadRecord[]>();
  for (const r of output.committed) actual.set(matchKey(r), [...(actual.get(matchKey(r)) ?? []), r]);

  return {
    pipeline,
    lab,
    matchKey,
    fromCommitted,
    fromAborted,
    expectedIdentities,
    expectedPerInput,
    actual,
    abortedRecords,
    logical,
    label: (r) => `${logical(r.topic)}-${r.partition}@${r.offset}`,
    inputLabel: (r) => `${r.topic}-${r.partition}@${r.offset} key=${r.key} value=${show(r.value)}`,
    faultBefore: (timestamp) => {
      const at = timestamp - history.startedAt;
      const fault = [...history.faults].reverse().find((f) => f.atMs <= at);
      return fault ? ` [after fault ${fault.kind} on ${fault.instance}${fault.crashPoint ? ` at ${fault.crashPoint}` : ''}, +${((at - fault.atMs) / 1000).toFixed(1)} s]` : '';
    },
  };
});
