import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { KafkaIqError } from '../core/errors.ts';
import { BROKER_LIB_DIR } from '../core/paths.ts';
import { findJava } from '../broker/java.ts';

const run = promisify(execFile);

export interface TransactionInfo {
  transactionalId: string;
  state: string;
  producerId: number;
  startedAt: string | null;
  durationMs: number | null;
  /** The transaction.timeout.ms the producer registered (DescribeTransactions), when known. */
  timeoutMs: number | null;
  partitions: string[];
}

/** Kafka's own admin tool (kafka-transactions.sh), which speaks ListTransactions/DescribeTransactions; kafkajs does not. */
async function transactionsCommand(brokers: string[], args: string[]): Promise<string> {
  const java = findJava();
  try {
    const { stdout } = await run(
      java.command,
      ['-Xmx128m', '-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC', '-cp', path.join(BROKER_LIB_DIR, '*'), 'org.apache.kafka.tools.TransactionsCommand', '--bootstrap-server', brokers.join(','), ...args],
      { timeout: 30_000, maxBuffer: 4 * 1024 * 1024 },
    );
    return stdout;
  } catch (err) {
    throw new KafkaIqError('BROKER_UNREACHABLE', `kafka-transactions could not ask the broker (${String((err as Error).message).split('\n')[0]}): is Kafka running?`);
  }
}

function rows(table: string): Record<string, string>[] {
  const lines = table.split('\n').filter((l) => l.trim());
  if (lines.length < 2) return [];
  const header = lines[0]!.trim().split(/\s+/);
  return lines.slice(1).map((line) => {
    const cells = line.trim().split(/\s+/);
    // The last column (topic partitions) may contain commas but no spaces.
    return Object.fromEntries(header.map((h, i) => [h, i === header.length - 1 ? cells.slice(i).join(' ') : (cells[i] ?? '')]));
  });
}

/** Open and recent transactions whose transactional id starts with the prefix. */
export async function listTransactions(brokers: string[], prefix: string): Promise<TransactionInfo[]> {
  const listed = rows(await transactionsCommand(brokers, ['list'])).filter((r) => r.TransactionalId?.startsWith(prefix));
  const described = await Promise.all(
    listed.map(async (r) => {
      if (r.TransactionState !== 'Ongoing') {
        return { transactionalId: r.TransactionalId!, state: r.TransactionState ?? '?', producerId: Number(r.ProducerId), startedAt: null, durationMs: null, timeoutMs: null, partitions: [] };
      }
      const [d] = rows(await transactionsCommand(brokers, ['describe', '--transactional-id', r.TransactionalId!]));
      const start = Number(d?.CurrentTransactionStartTimeMs);
      return {
        transactionalId: r.TransactionalId!,
        state: d?.TransactionState ?? r.TransactionState ?? '?',
        producerId: Number(r.ProducerId),
        startedAt: start > 0 ? new Date(start).toISOString() : null,
        durationMs: d?.TransactionDurationMs ? Number(d.TransactionDurationMs) : null,
        timeoutMs: d?.TransactionTimeoutMs ? Number(d.TransactionTimeoutMs) : null,
        partitions: d?.TopicPartitions && d.TopicPartitions !== 'None' ? d.TopicPartitions.split(',') : [],
      };
    }),
  );
  return described;
}
