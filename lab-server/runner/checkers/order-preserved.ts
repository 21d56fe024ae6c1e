/** order-preserved: per output partition, the outputs of one input partition keep their input order. */
import type { Checker } from './contract.ts';
import { outputMatch } from './output-match.ts';
import type { ReadRecord } from '../../kafka/inspect.ts';
import { checkResult } from './result.ts';

export const orderPreserved: Checker = (collected, history) => {
  const m = outputMatch(collected, history);
  if (!m) return null;
  const failures: string[] = [];
  const partitions = new Map<string, ReadRecord[]>();
  for (const r of m.pipeline.output.committed) partitions.set(`${r.topic}/${r.partition}`, [...(partitions.get(`${r.topic}/${r.partition}`) ?? []), r]);
  for (const records of partitions.values()) {
    const lastByInputPartition = new Map<string, { offset: number; out: ReadRecord }>();
    const seen = new Set<string>();
    for (const r of records) {
      const source = m.fromCommitted.get(m.matchKey(r));
      if (!source || seen.has(m.matchKey(r))) continue;
      seen.add(m.matchKey(r));
      const key = `${source.input.topic}-${source.input.partition}`;
      const previous = lastByInputPartition.get(key);
      if (previous && previous.offset > source.input.offset) {
        failures.push(`${m.label(r)} (from ${key}@${source.input.offset}) comes after ${m.label(previous.out)} (from ${key}@${previous.offset})`);
      }
      lastByInputPartition.set(key, { offset: source.input.offset, out: r });
    }
  }
  return checkResult('order-preserved', failures, 'outputs keep the order of their input partition', (n) => `${n} outputs are out of input order`);
};
