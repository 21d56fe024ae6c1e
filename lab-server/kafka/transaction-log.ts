/**
 * Reads the transaction coordinator's own log, the internal topic __transaction_state, without
 * the Java admin API (kafkajs has no ListTransactions/DescribeTransactions). Every state change
 * of a transactional id is one record there:
 *
 *   key   = int16 record type (0: a transaction-log record) + string transactionalId
 *   value = int16 version, then producerId int64, producerEpoch int16, timeoutMs int32,
 *           state int8, partitions [{topic string, partitionIds [int32]}] (nullable),
 *           lastUpdateMs int64, startMs int64 (-1 when no transaction is open)
 *
 * Version 0 uses classic encodings (int16 string lengths, int32 array lengths). Version 1, which
 * Kafka 4.x writes, is a "flexible" version: lengths are unsigned varints holding length + 1, and
 * the value and every partition entry end with tagged fields (Kafka 4 puts PreviousProducerId,
 * NextProducerId and ClientTransactionVersion there). A null value is a tombstone: the id expired.
 *
 * The grader uses this to show the coordinator's view of its own transactions; the lab's learner
 * writes the same few Buffer reads in their monitor (solutions stay standalone programs).
 */
import { KafkaIqError } from '../../src/shared/errors.ts';

export const TRANSACTION_STATE_TOPIC = '__transaction_state';

/** Kafka's TransactionState ids, in id order. */
export const TRANSACTION_STATES = [
  'Empty',
  'Ongoing',
  'PrepareCommit',
  'PrepareAbort',
  'CompleteCommit',
  'CompleteAbort',
  'Dead',
  'PrepareEpochFence',
] as const;
export type TransactionStateName = (typeof TRANSACTION_STATES)[number];

export interface TransactionLogValue {
  version: number;
  producerId: bigint;
  producerEpoch: number;
  timeoutMs: number;
  /** Kafka's state name, or `Unknown(<id>)` for an id this code does not know. */
  state: TransactionStateName | `Unknown(${number})`;
  /** Topic -> partitions of the current transaction (empty outside Ongoing/Prepare*). */
  partitions: { topic: string; partitions: number[] }[];
  lastUpdateMs: number;
  /** When the current transaction started; null when none is open (-1 on the wire). */
  startMs: number | null;
}

export interface TransactionLogRecord {
  transactionalId: string;
  /** null: a tombstone (the transactional id expired and was removed). */
  value: TransactionLogValue | null;
}

/** A __transaction_state record this decoder cannot read: cut short, or of a version it does not know. */
export class TransactionLogFormatError extends KafkaIqError {
  constructor(message: string) {
    super('INTERNAL', message);
    this.name = 'TransactionLogFormatError';
  }
}

class Reader {
  private pos = 0;
  constructor(private readonly buf: Buffer) {}

  private need(bytes: number): void {
    if (this.pos + bytes > this.buf.length) {
      throw new TransactionLogFormatError(`truncated record: needs ${bytes} more bytes at ${this.pos} of ${this.buf.length}`);
    }
  }
  /** Reads `bytes` bytes at the current position with `read`, and moves past them. */
  private take<T>(bytes: number, read: (pos: number) => T): T {
    this.need(bytes);
    const v = read(this.pos);
    this.pos += bytes;
    return v;
  }
  int8(): number {
    return this.take(1, (pos) => this.buf.readInt8(pos));
  }
  int16(): number {
    return this.take(2, (pos) => this.buf.readInt16BE(pos));
  }
  int32(): number {
    return this.take(4, (pos) => this.buf.readInt32BE(pos));
  }
  int64(): bigint {
    return this.take(8, (pos) => this.buf.readBigInt64BE(pos));
  }
  uvarint(): number {
    let value = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      this.need(1);
      const byte = this.buf[this.pos++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return value;
    }
    throw new TransactionLogFormatError(`unsigned varint longer than 5 bytes at ${this.pos}`);
  }
  bytes(length: number): Buffer {
    return this.take(length, (pos) => this.buf.subarray(pos, pos + length));
  }
  string(flexible: boolean): string {
    const length = flexible ? this.uvarint() - 1 : this.int16();
    if (length < 0) throw new TransactionLogFormatError('null string where a string is required');
    return this.bytes(length).toString('utf8');
  }
  /** Array length; null for a null array. */
  arrayLength(flexible: boolean): number | null {
    const length = flexible ? this.uvarint() - 1 : this.int32();
    return length < 0 ? null : length;
  }
  skipTaggedFields(): void {
    const count = this.uvarint();
    for (let i = 0; i < count; i++) {
      this.uvarint(); // tag
      this.bytes(this.uvarint());
    }
  }
}

/** The transactional id of a __transaction_state key, or null for a key of another record type. */
export function decodeTransactionLogKey(key: Buffer): string | null {
  const reader = new Reader(key);
  if (reader.int16() !== 0) return null;
  return reader.string(false);
}

/** Decodes a __transaction_state value (versions 0 and 1); null for a tombstone. */
export function decodeTransactionLogValue(value: Buffer | null): TransactionLogValue | null {
  if (!value) return null;
  const reader = new Reader(value);
  const version = reader.int16();
  if (version < 0 || version > 1) throw new TransactionLogFormatError(`unknown transaction log value version ${version}`);
  const flexible = version >= 1;
  const producerId = reader.int64();
  const producerEpoch = reader.int16();
  const timeoutMs = reader.int32();
  const stateId = reader.int8();
  const partitions: TransactionLogValue['partitions'] = [];
  const topics = reader.arrayLength(flexible) ?? 0;
  for (let i = 0; i < topics; i++) {
    const topic = reader.string(flexible);
    const ids: number[] = [];
    const count = reader.arrayLength(flexible) ?? 0;
    for (let j = 0; j < count; j++) ids.push(reader.int32());
    if (flexible) reader.skipTaggedFields();
    partitions.push({ topic, partitions: ids });
  }
  const lastUpdateMs = Number(reader.int64());
  const startMs = Number(reader.int64());
  if (flexible) reader.skipTaggedFields();
  return {
    version,
    producerId,
    producerEpoch,
    timeoutMs,
    state: TRANSACTION_STATES[stateId] ?? `Unknown(${stateId})`,
    partitions,
    lastUpdateMs,
    startMs: startMs < 0 ? null : startMs,
  };
}

/** One __transaction_state record; null when the key is not a transaction-log key. */
export function decodeTransactionLogRecord(key: Buffer | null, value: Buffer | null): TransactionLogRecord | null {
  if (!key) return null;
  const transactionalId = decodeTransactionLogKey(key);
  if (transactionalId === null) return null;
  return { transactionalId, value: decodeTransactionLogValue(value) };
}
