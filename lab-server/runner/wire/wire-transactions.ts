/**
 * What one program instance's own producers did, as the relay saw it on the wire: each producer's
 * id and epoch (from InitProducerId answers), and its open transaction: the records it wrote to
 * each topic, the partitions it added, the input offsets it put in, and whether it is ending.
 * Never from the program's word, never from the partition-wide LSO (another producer's, or a
 * decoy transaction of the same program, cannot stand in for the one carrying the batch).
 *
 * Also the crash point each Kafka message is (the first half of the point table, see
 * wire-points.ts). Pure: messages in, state and points out.
 */
import type { CrashPoint } from '../../../src/shared/report.ts';
import type { ProducedBatch, TopicPartition } from './kafka-bodies.ts';
import type { KafkaRequest, KafkaResponse } from './kafka-wire.ts';

export interface OpenTransaction {
  /** Records written in it, per topic. */
  records: Map<string, number>;
  /** Input offsets put in it (TxnOffsetCommit), as `group/topic:partition`. */
  offsets: Map<string, bigint>;
  /** Set by an EndTxn request until its answer. */
  ending: 'commit' | 'abort' | null;
}

interface Producer {
  transactionalId: string | null;
  epoch: number;
  open: OpenTransaction | null;
}

/** A Kafka message as a crash point, with what it carries. */
export interface KafkaPoint {
  point: CrashPoint;
  producerId: bigint | null;
  /** Records a send carries. */
  records?: number;
  /** The topics the call writes (a send) or its transaction has written (offsets, commit, abort). */
  written: string[];
  /** For an answer: the broker's error, by name, when it refused the call. */
  error?: string;
  /** The producer's transactional id, for a transactional call. */
  transactionalId?: string;
}

/** Topic ids (Produce v13 and OffsetCommit v10 name topics by id) kept per instance, from its Metadata answers. */
const MAX_TOPIC_IDS = 1024;

/** Whether an open transaction has records written in it. */
const hasRecords = (open: OpenTransaction) => [...open.records.values()].some((n) => n > 0);

/**
 * INVALID_PRODUCER_EPOCH (47) and PRODUCER_FENCED (90): the coordinator holds a newer epoch for
 * the producer's transactional id (another instance initialised it, or the coordinator bumped it at
 * the transaction's timeout), and moving to that epoch aborted the transaction this one held.
 */
const FENCED = new Set([47, 90]);

/** The broker's answer for one batch of a Produce request. */
function answerTo<A extends TopicPartition>(batch: ProducedBatch, answers: A[]): A | undefined {
  return answers.find((a) => a.partition === batch.partition && (a.topicId ? a.topicId === batch.topicId : a.topic === batch.topic));
}

export class WireTransactions {
  private readonly producers = new Map<bigint, Producer>();
  private readonly topicNames = new Map<string, string>();

  /** A partition's topic by name, whether the request named it or gave its id. */
  private topicOf(at: { topic: string; topicId?: string }): string {
    return at.topic || (at.topicId ? (this.topicNames.get(at.topicId) ?? at.topicId) : '');
  }

  /** Takes in a message the relay is about to deliver; returns the crash point it is, if any. */
  apply(message: KafkaRequest | KafkaResponse, errorName: (code: number) => string): KafkaPoint | null {
    if (message.kind === 'response' && message.body?.api === 'Metadata') {
      for (const { topic, topicId } of message.body.topicIds) if (this.topicNames.size < MAX_TOPIC_IDS || this.topicNames.has(topicId)) this.topicNames.set(topicId, topic);
    }
    return message.kind === 'request' ? this.request(message) : this.response(message, errorName);
  }

  /** The producer's open transaction, if any. */
  transactionOf(producerId: bigint | null): OpenTransaction | null {
    return producerId === null ? null : (this.producers.get(producerId)?.open ?? null);
  }

  /** Whether any producer of the instance has a transaction open at the broker (it wrote, added or put offsets in it). */
  anyOpen(): boolean {
    return [...this.producers.values()].some((p) => p.open !== null);
  }

  /**
   * A producer whose open transaction carries records and is not being aborted: what a crash at
   * this moment could lose or duplicate. Its transactional id ('' when the relay never saw it).
   */
  openCarryingRecords(): { transactionalId: string } | null {
    for (const p of this.producers.values()) {
      if (p.open && p.open.ending !== 'abort' && hasRecords(p.open)) return { transactionalId: p.transactionalId ?? '' };
    }
    return null;
  }

  /** Whether a producer has a transaction open with records written in it (read_committed readers wait behind it). */
  anyOpenWithRecords(): boolean {
    return [...this.producers.values()].some((p) => p.open !== null && hasRecords(p.open));
  }

  /**
   * Whether the producer's transaction carries the batch being processed at `point`: output
   * records, and from sendOffsets on the input offsets too. A transaction opened for show, or one
   * that holds only offsets, carries nothing a crash could lose or duplicate.
   */
  carriesBatch(producerId: bigint | null, point: CrashPoint): boolean {
    const open = this.transactionOf(producerId);
    if (!open || open.ending === 'abort') return false;
    const records = [...open.records.values()].reduce((a, b) => a + b, 0);
    const needsOffsets = point !== 'before:send' && point !== 'after:send';
    return records > 0 && (!needsOffsets || open.offsets.size > 0);
  }

  private producer(producerId: bigint, transactionalId: string | null): Producer {
    let producer = this.producers.get(producerId);
    if (!producer) {
      producer = { transactionalId, epoch: -1, open: null };
      this.producers.set(producerId, producer);
    }
    return producer;
  }

  /** A refused Produce wrote nothing: its records leave the open transaction that counted them. */
  private unsent(batches: ProducedBatch[], answers: Array<TopicPartition & { errorCode: number }>): void {
    const refused = (b: ProducedBatch) => (answerTo(b, answers)?.errorCode ?? 0) !== 0;
    for (const batch of batches.filter((b) => b.transactional && refused(b))) {
      const open = this.producers.get(batch.producerId)?.open;
      if (!open) continue;
      const topic = this.topicOf(batch);
      const left = (open.records.get(topic) ?? 0) - batch.records;
      if (left > 0) open.records.set(topic, left);
      else open.records.delete(topic);
    }
  }

  /** A fenced producer's transaction is over: the broker aborted it when the newer epoch began. */
  private fencedIf(producerId: bigint, errorCode: number | undefined): void {
    const producer = this.producers.get(producerId);
    if (producer && errorCode !== undefined && FENCED.has(errorCode)) producer.open = null;
  }

  private opened(producer: Producer): OpenTransaction {
    producer.open ??= { records: new Map(), offsets: new Map(), ending: null };
    return producer.open;
  }

  private request(message: KafkaRequest): KafkaPoint | null {
    const body = message.body;
    if (!body) return null;
    switch (body.api) {
      case 'Produce': {
        const batches = body.batches.filter((b) => !b.control && b.records > 0);
        if (!batches.length) return null;
        for (const batch of batches.filter((b) => b.transactional)) {
          const open = this.opened(this.producer(batch.producerId, body.transactionalId));
          const topic = this.topicOf(batch);
          open.records.set(topic, (open.records.get(topic) ?? 0) + batch.records);
        }
        const records = batches.reduce((n, b) => n + b.records, 0);
        const written = [...new Set(batches.map((b) => this.topicOf(b)))];
        return { point: 'before:send', producerId: batches[0]!.producerId, records, written, ...(body.transactionalId ? { transactionalId: body.transactionalId } : {}) };
      }
      case 'AddPartitionsToTxn':
        this.opened(this.producer(body.producerId, body.transactionalId));
        return null;
      case 'AddOffsetsToTxn':
        this.opened(this.producer(body.producerId, body.transactionalId));
        return null;
      case 'TxnOffsetCommit': {
        const open = this.opened(this.producer(body.producerId, body.transactionalId));
        for (const o of body.offsets) open.offsets.set(`${body.groupId}/${this.topicOf(o)}:${o.partition}`, o.offset);
        return { point: 'before:sendOffsets', producerId: body.producerId, written: [...open.records.keys()], transactionalId: body.transactionalId };
      }
      case 'EndTxn': {
        const producer = this.producer(body.producerId, body.transactionalId);
        if (producer.open) producer.open.ending = body.committed ? 'commit' : 'abort';
        return { point: body.committed ? 'before:commit' : 'before:abort', producerId: body.producerId, written: [...(producer.open?.records.keys() ?? [])], transactionalId: body.transactionalId };
      }
      case 'OffsetCommit':
        return { point: 'before:commitOffsets', producerId: null, written: [] };
      default:
        return null;
    }
  }

  private response(message: KafkaResponse, errorName: (code: number) => string): KafkaPoint | null {
    const request = message.request;
    const body = message.body;
    if (!request || !body) return null;
    if (body.api === 'InitProducerId' && request.api === 'InitProducerId') {
      if (body.errorCode !== 0) return null;
      // A new epoch for a transactional id ends (the broker aborts) the transaction its earlier epoch held.
      for (const [id, p] of this.producers) if (request.transactionalId !== null && p.transactionalId === request.transactionalId && id !== body.producerId) p.open = null;
      const producer = this.producer(body.producerId, request.transactionalId);
      if (body.producerEpoch !== producer.epoch) producer.open = null;
      producer.epoch = body.producerEpoch;
      return null;
    }
    const firstError = (codes: number[]) => codes.find((c) => c !== 0);
    if (body.api === 'Produce' && request.api === 'Produce') {
      const batches = request.batches.filter((b) => !b.control && b.records > 0);
      if (!batches.length) return null;
      const error = firstError(body.partitions.map((p) => p.errorCode));
      if (error) this.unsent(batches, body.partitions);
      for (const batch of batches.filter((b) => b.transactional)) this.fencedIf(batch.producerId, answerTo(batch, body.partitions)?.errorCode);
      const written = [...new Set(batches.map((b) => this.topicOf(b)))];
      const transactionalId = request.transactionalId ? { transactionalId: request.transactionalId } : {};
      return { point: 'after:send', producerId: batches[0]!.producerId, records: batches.reduce((n, b) => n + b.records, 0), written, ...transactionalId, ...(error ? { error: errorName(error) } : {}) };
    }
    // A refused AddPartitionsToTxn or AddOffsetsToTxn fails the client's send or sendOffsets before
    // its Produce or TxnOffsetCommit goes out (a fenced zombie's first call after waking, say).
    if (body.api === 'AddPartitionsToTxn' && request.api === 'AddPartitionsToTxn') {
      const error = firstError(body.errorCodes);
      this.fencedIf(request.producerId, error);
      return error ? { point: 'after:send', producerId: request.producerId, written: [], transactionalId: request.transactionalId, error: errorName(error) } : null;
    }
    if (body.api === 'AddOffsetsToTxn' && request.api === 'AddOffsetsToTxn') {
      this.fencedIf(request.producerId, body.errorCode);
      return body.errorCode ? { point: 'after:sendOffsets', producerId: request.producerId, written: [], transactionalId: request.transactionalId, error: errorName(body.errorCode) } : null;
    }
    if (body.api === 'TxnOffsetCommit' && request.api === 'TxnOffsetCommit') {
      const error = firstError(body.errorCodes);
      const written = [...(this.transactionOf(request.producerId)?.records.keys() ?? [])];
      this.fencedIf(request.producerId, error);
      return { point: 'after:sendOffsets', producerId: request.producerId, written, transactionalId: request.transactionalId, ...(error ? { error: errorName(error) } : {}) };
    }
    if (body.api === 'OffsetCommit' && request.api === 'OffsetCommit') {
      const error = firstError(body.errorCodes);
      return { point: 'after:commitOffsets', producerId: null, written: [], ...(error ? { error: errorName(error) } : {}) };
    }
    if (body.api === 'EndTxn' && request.api === 'EndTxn') {
      const producer = this.producers.get(request.producerId);
      const written = [...(producer?.open?.records.keys() ?? [])];
      const records = [...(producer?.open?.records.values() ?? [])].reduce((a, b) => a + b, 0);
      if (producer?.open) {
        // Ended either way once the coordinator accepted it; a refused EndTxn leaves it as it was,
        // unless the refusal says the producer was fenced (the broker aborted it then).
        if (body.errorCode === 0) producer.open = null;
        else producer.open.ending = null;
        this.fencedIf(request.producerId, body.errorCode);
      }
      const point: CrashPoint = request.committed ? 'after:commit' : 'after:abort';
      return { point, producerId: request.producerId, written, records, transactionalId: request.transactionalId, ...(body.errorCode ? { error: errorName(body.errorCode) } : {}) };
    }
    return null;
  }
}
