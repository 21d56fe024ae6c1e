import type { Kafka } from 'kafkajs';
import type { ExpectedRecord, PipelineLab } from '../../../src/shared/lab.ts';
import type { CheckName, CheckResult, FaultRecord } from '../../../src/shared/report.ts';
import { fetchCommittedOffsets } from '../../kafka/group-offsets.ts';
import { partitionOffsets, readTopic, type ReadRecord } from '../../kafka/inspect.ts';
import type { SeededRecord } from '../seeder.ts';
import { capEvidence } from './evidence.ts';

/** Where to read a pipeline attempt's output. */
export interface OutputSource {
  kafka: Kafka;
  brokers: string[];
  lab: PipelineLab;
  groupId: string;
  realTopic: (logical: string) => string;
}

/** What the broker holds after the program stopped: the output both ways, and the group's offsets. */
export interface OutputRead {
  /** The output topics as a read_committed consumer reads them. */
  committed: ReadRecord[];
  /** ... and as a read_uncommitted one does. */
  uncommitted: ReadRecord[];
  /** Output partitions whose LSO is below the high watermark (an open transaction). */
  hanging: string[];
  /** Output topics the read_committed reader could not read to their end. */
  blocked: string[];
  /** Per input partition: the group's committed offset (-1: none) and the end of the log. */
  inputOffsets: { topic: string; partition: number; committed: number; hwm: number }[];
}

export interface OutputCheckInput {
  lab: PipelineLab;
  realTopic: (logical: string) => string;
  inputs: readonly SeededRecord[];
  faults: readonly FaultRecord[];
  /** Wall-clock time the run started, to place records after faults. */
  startedAt: number;
  /**
   * What the grade learned about open transactions (scenarios/abandoned-transactions.ts), or null
   * (then an LSO below the high watermark at verification is a hanging transaction, as before).
   */
  transactions?: { heldAtEnd: string[]; outlived: string[]; insideTimeout: string[]; known: boolean; blockedMs: number } | null;
  /** Checks decided elsewhere in the grade (e.g. throughput-speedup, effect checks), reported in the lab's order; they replace built-in checks of the same name. */
  extraChecks?: CheckResult[];
}

export interface Verification {
  checks: CheckResult[];
  outputs: number;
  abortedRecords: number;
}

const identity = (r: { topic: string; key: string | null; value: string | null }) => `${r.topic}\u0000${r.key}\u0000${r.value}`;
const show = (v: string | null, max = 60) => (v === null ? 'null' : JSON.stringify(v.length > max ? `${v.slice(0, max)}…` : v));

/** Reads the program's output the way a downstream read_committed consumer would, and read_uncommitted too. */
export async function readPipelineOutput(source: OutputSource): Promise<OutputRead> {
  const { lab, kafka, brokers, realTopic } = source;
  const read: OutputRead = { committed: [], uncommitted: [], hanging: [], blocked: [], inputOffsets: [] };
  for (const topic of lab.topics.filter((t) => t.role === 'output')) {
    const real = realTopic(topic.name);
    const offsets = await partitionOffsets(brokers, real);
    for (const p of offsets) {
      if (p.lso < p.hwm) read.hanging.push(`${topic.name}-${p.partition}: LSO ${p.lso} < high watermark ${p.hwm} (${p.hwm - p.lso} records behind an open transaction)`);
    }
    const rc = await readTopic(kafka, brokers, real, { isolation: 'read_committed', timeoutMs: 15_000 });
    const ru = await readTopic(kafka, brokers, real, { isolation: 'read_uncommitted', timeoutMs: 15_000 });
    if (!rc.complete) read.blocked.push(`${topic.name}: the read_committed reader could not reach the end within 15 s`);
    read.committed.push(...rc.records);
    read.uncommitted.push(...ru.records);
  }
  const admin = kafka.admin();
  await admin.connect();
  try {
    for (const topic of lab.topics.filter((t) => t.role === 'input')) {
      const real = realTopic(topic.name);
      const committed = await fetchCommittedOffsets(admin, source.groupId, real);
      for (const end of await partitionOffsets(brokers, real)) {
        read.inputOffsets.push({ topic: topic.name, partition: end.partition, committed: committed.find((p) => p.partition === end.partition)?.offset ?? -1, hwm: end.hwm });
      }
    }
  } finally {
    await admin.disconnect();
  }
  return read;
}

/**
 * Decides every check a pipeline can have from what was read, with evidence a learner can follow:
 * a pure function. The lab's own list is selected afterwards (selectLabChecks).
 */
export function checkPipelineOutput(read: OutputRead, input: OutputCheckInput): Verification {
  const { lab, realTopic } = input;
  const logicalOf = new Map(lab.topics.map((t) => [realTopic(t.name), t.name]));
  const { committed: committedOut, uncommitted: uncommittedOut, hanging, blocked } = read;
  const label = (r: ReadRecord) => `${logicalOf.get(r.topic) ?? r.topic}-${r.partition}@${r.offset}`;
  const committedKeys = new Set(committedOut.map((r) => `${r.topic}/${r.partition}/${r.offset}`));
  const abortedRecords = uncommittedOut.filter((r) => !committedKeys.has(`${r.topic}/${r.partition}/${r.offset}`)).length;

  const faultBefore = (timestamp: number) => {
    const at = timestamp - input.startedAt;
    const fault = [...input.faults].reverse().find((f) => f.atMs <= at);
    return fault ? ` [after fault ${fault.kind} on ${fault.instance}${fault.crashPoint ? ` at ${fault.crashPoint}` : ''}, +${((at - fault.atMs) / 1000).toFixed(1)} s]` : '';
  };

  // How an output is matched with the input it belongs to: by its exact (topic, key, value), or,
  // for labs whose outputs depend on earlier inputs too (running totals), by the origin the lab
  // reads from the output (e.g. its orderId). Then a record counted twice is a duplicate and a
  // wrong total is a transform error, instead of both looking like an unknown record.
  const { origin } = lab;
  const matchKey = (r: { topic: string; key: string | null; value: string | null }): string => {
    if (!origin) return identity(r);
    let id: string | null = null;
    try {
      id = origin({ topic: logicalOf.get(r.topic) ?? r.topic, key: r.key ?? '', value: r.value ?? '' });
    } catch {
      // An unreadable value has no origin; it is matched by its exact content.
    }
    return id === null ? identity(r) : `${r.topic}\u0000origin\u0000${id}`;
  };

  // What every committed and every aborted input must (or must not) produce.
  type Expectation = { input: SeededRecord; expected: ExpectedRecord };
  const fromCommitted = new Map<string, Expectation>();
  const fromAborted = new Map<string, Expectation>();
  const expectedIdentities = new Set<string>();
  const expectedPerInput = new Map<number, string[]>();
  const context = { committed: input.inputs.filter((r) => r.committed) };
  for (const record of input.inputs) {
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
  for (const r of committedOut) actual.set(matchKey(r), [...(actual.get(matchKey(r)) ?? []), r]);
  const inputLabel = (r: SeededRecord) => `${r.topic}-${r.partition}@${r.offset} key=${r.key} value=${show(r.value)}`;

  const results = new Map<CheckName, CheckResult>((input.extraChecks ?? []).map((c) => [c.name, c]));
  const result = (name: CheckName, failures: string[], okSummary: string, failSummary: (n: number) => string) => {
    // A check decided elsewhere wins (e.g. no-aborted-reads judged on a database's rows).
    if (input.extraChecks?.some((c) => c.name === name)) return;
    results.set(name, {
      name,
      passed: failures.length === 0,
      summary: failures.length === 0 ? okSummary : failSummary(failures.length),
      evidence: capEvidence(failures),
    });
  };

  // no-loss
  const missing = [...fromCommitted].filter(([id]) => !actual.has(id));
  const txns = input.transactions;
  const lossNotes = blocked.length || hanging.length ? [...hanging, ...(txns?.insideTimeout ?? []), ...blocked] : [];
  result(
    'no-loss',
    missing.length ? [...lossNotes, ...missing.map(([, e]) => `missing output for input ${inputLabel(e.input)}`)] : [],
    `all ${fromCommitted.size} expected outputs are committed`,
    () => `${missing.length} of ${fromCommitted.size} expected outputs are missing from the committed output`,
  );

  // no-duplicates
  const dupes = [...actual].filter(([, records]) => records.length > 1);
  result(
    'no-duplicates',
    dupes.flatMap(([, records]) =>
      records.slice(1).map((r) =>
        origin
          ? // Same origin, maybe another value (a total counted again): show both.
            `${label(r)} key=${r.key} value=${show(r.value, 120)} is a second output for the input of ${label(records[0]!)} value=${show(records[0]!.value, 120)}${faultBefore(r.timestamp)}`
          : `${label(r)} key=${r.key} value=${show(r.value)} duplicates ${label(records[0]!)}${faultBefore(r.timestamp)}`,
      ),
    ),
    'no output record appears twice',
    () => `${dupes.reduce((n, [, r]) => n + r.length - 1, 0)} duplicate output records (${dupes.length} inputs processed more than once)`,
  );

  // no-aborted-reads
  const abortedReads = committedOut.filter((r) => fromAborted.has(matchKey(r)));
  result(
    'no-aborted-reads',
    abortedReads.map((r) => `${label(r)} value=${show(r.value)} comes from aborted input ${inputLabel(fromAborted.get(matchKey(r))!.input)}`),
    `none of the ${input.inputs.filter((r) => !r.committed).length} aborted input records leaked into the output`,
    (n) => `${n} output records were derived from input written in aborted transactions (read_uncommitted?)`,
  );

  // transform-correct
  const wrong = committedOut.filter((r) =>
    origin ? !expectedIdentities.has(identity(r)) && !fromAborted.has(matchKey(r)) : !fromCommitted.has(identity(r)) && !fromAborted.has(identity(r)),
  );
  const byValue = new Map<string, ExpectedRecord>();
  for (const { expected } of fromCommitted.values()) byValue.set(`${expected.topic}\u0000${expected.value}`, expected);
  result(
    'transform-correct',
    wrong.map((r) => {
      const sameOrigin = origin ? fromCommitted.get(matchKey(r)) : undefined;
      if (sameOrigin) {
        const { expected } = sameOrigin;
        return expected.value !== r.value
          ? `${label(r)} key=${r.key} value=${show(r.value, 120)} should be ${show(expected.value, 120)} (input ${inputLabel(sameOrigin.input)})${faultBefore(r.timestamp)}`
          : `${label(r)} has key=${r.key} but the input's key is ${expected.key}`;
      }
      const sameValue = byValue.get(`${logicalOf.get(r.topic)}\u0000${r.value}`);
      return sameValue
        ? `${label(r)} has key=${r.key} but the input's key is ${sameValue.key}`
        : `${label(r)} key=${r.key} value=${show(r.value)} is not the lab's transform of any input`;
    }),
    'every output is the expected transform of its input, with the same key',
    (n) => (origin ? `${n} output records do not have the value their input should give` : `${n} output records are not the expected transform of any input`),
  );

  // order-preserved: per output partition, outputs of one input partition keep their input order.
  const orderFailures: string[] = [];
  const partitions = new Map<string, ReadRecord[]>();
  for (const r of committedOut) partitions.set(`${r.topic}/${r.partition}`, [...(partitions.get(`${r.topic}/${r.partition}`) ?? []), r]);
  for (const records of partitions.values()) {
    const lastByInputPartition = new Map<string, { offset: number; out: ReadRecord }>();
    const seen = new Set<string>();
    for (const r of records) {
      const source = fromCommitted.get(matchKey(r));
      if (!source || seen.has(matchKey(r))) continue;
      seen.add(matchKey(r));
      const key = `${source.input.topic}-${source.input.partition}`;
      const previous = lastByInputPartition.get(key);
      if (previous && previous.offset > source.input.offset) {
        orderFailures.push(`${label(r)} (from ${key}@${source.input.offset}) comes after ${label(previous.out)} (from ${key}@${previous.offset})`);
      }
      lastByInputPartition.set(key, { offset: source.input.offset, out: r });
    }
  }
  result('order-preserved', orderFailures, 'outputs keep the order of their input partition', (n) => `${n} outputs are out of input order`);

  // atomic-fan-out: all outputs of an input, or none.
  const partial: string[] = [];
  for (const record of input.inputs) {
    const ids = expectedPerInput.get(record.index);
    if (!ids || ids.length < 2) continue;
    const present = ids.filter((id) => actual.has(id)).length;
    if (present > 0 && present < ids.length) partial.push(`input ${inputLabel(record)}: ${present} of ${ids.length} outputs committed`);
  }
  result('atomic-fan-out', partial, 'every input produced all of its outputs or none', (n) => `${n} inputs produced only part of their outputs`);

  // offsets-consistent: the group's committed offsets end right after the last processed input.
  const offsetFailures: string[] = [];
  for (const end of read.inputOffsets) {
    const lastData = Math.max(-1, ...input.inputs.filter((r) => r.topic === end.topic && r.partition === end.partition && r.committed).map((r) => r.offset));
    const got = end.committed;
    if (lastData < 0) continue;
    if (got < lastData + 1 || got > end.hwm) {
      offsetFailures.push(
        `${end.topic}-${end.partition}: group ${got < 0 ? 'has no committed offset' : `committed offset ${got}`}, expected between ${lastData + 1} (after the last record, offset ${lastData}) and ${end.hwm} (end of log)` +
          (got === lastData ? ' — off by one: commit the offset of the NEXT record to read (last + 1)' : ''),
      );
    }
  }
  result('offsets-consistent', offsetFailures, "the group's committed offsets end right after the last input", (n) => `${n} input partitions have wrong committed offsets`);

  // no-hanging-transactions
  // A transaction is hanging when a live instance still holds it at the end, or when it outlived
  // its own timeout; one a stopped instance left inside its timeout is the coordinator's to end
  // (the grader waited for that, bounded), and blocks the output meanwhile (see no-loss).
  const blockedFor = txns?.blockedMs ? ` (read_committed readers were held back ${(txns.blockedMs / 1000).toFixed(1)} s by transactions of stopped instances until the coordinator aborted them)` : '';
  const hangingFailures = txns?.known ? [...txns.heldAtEnd, ...txns.outlived] : [...(txns?.heldAtEnd ?? []), ...hanging];
  result(
    'no-hanging-transactions',
    hangingFailures,
    `no transaction was left open: every output LSO reached its high watermark${blockedFor}`,
    (n) => `${n} transaction${n === 1 ? ' was' : 's were'} left open (held by a live instance at the end, or open past ${n === 1 ? 'its' : 'their'} own timeout)`,
  );

  return {
    checks: [...results.values()],
    outputs: committedOut.length,
    abortedRecords,
  };
}
