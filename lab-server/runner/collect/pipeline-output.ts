/**
 * Reads what a pipeline program left on the broker once it stopped: the output topics as a
 * read_committed and a read_uncommitted consumer see them, the group's committed offsets on the
 * input, and where each output partition's log starts. The checkers judge it (checkers/).
 */
import type { Kafka } from 'kafkajs';
import type { PipelineLab } from '../../../src/shared/lab.ts';
import { withAdmin } from '../../kafka/client.ts';
import { fetchCommittedOffsets } from '../../kafka/group-offsets.ts';
import { partitionOffsets, readTopic } from '../../kafka/inspect.ts';
import type { OutputRead, PartitionStart } from '../checkers/output-read.ts';

/** Where to read a pipeline attempt's output. */
export interface OutputSource {
  kafka: Kafka;
  brokers: string[];
  lab: PipelineLab;
  groupId: string;
  realTopic: (logical: string) => string;
}

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
  await withAdmin(kafka, async (admin) => {
    for (const topic of lab.topics.filter((t) => t.role === 'input')) {
      const real = realTopic(topic.name);
      const committed = await fetchCommittedOffsets(admin, source.groupId, real);
      for (const end of await partitionOffsets(brokers, real)) {
        read.inputOffsets.push({ topic: topic.name, partition: end.partition, committed: committed.find((p) => p.partition === end.partition)?.offset ?? -1, hwm: end.hwm });
      }
    }
  });
  return read;
}

/** Where each output partition's log starts (read after the output: a DeleteRecords racing the readers shows here at the latest). */
export async function readLogStarts(brokers: string[], lab: PipelineLab, realTopic: (logical: string) => string): Promise<PartitionStart[]> {
  const starts: PartitionStart[] = [];
  for (const t of lab.topics.filter((topic) => topic.role === 'output')) {
    for (const p of await partitionOffsets(brokers, realTopic(t.name))) starts.push({ topic: t.name, partition: p.partition, logStart: p.logStart });
  }
  return starts;
}
