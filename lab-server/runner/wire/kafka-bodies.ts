/**
 * The request and response bodies of Kafka's protocol that exactly-once depends on, read field by
 * field as Kafka's message definitions (clients/src/main/resources/common/message/*.json) lay them
 * out for each version. Everything else a client sends passes the relay unread.
 *
 * The primitive reads (varints, compact strings, tagged fields) are @platformatic/kafka's Reader;
 * the layouts are here because neither client library decodes requests (they only write them).
 * Each reader takes `flexible` (the version is past the api's first flexible version: compact
 * strings and arrays, tagged fields after every structure).
 */
import type { DynamicBuffer } from '@platformatic/dynamic-buffer';
import { Reader } from '@platformatic/kafka';

/** Api keys, as the protocol numbers them. */
export const API_KEYS = {
  Produce: 0,
  Fetch: 1,
  Metadata: 3,
  OffsetCommit: 8,
  JoinGroup: 11,
  Heartbeat: 12,
  LeaveGroup: 13,
  SyncGroup: 14,
  SaslHandshake: 17,
  ApiVersions: 18,
  InitProducerId: 22,
  AddPartitionsToTxn: 24,
  AddOffsetsToTxn: 25,
  EndTxn: 26,
  TxnOffsetCommit: 28,
  SaslAuthenticate: 36,
  ConsumerGroupHeartbeat: 68,
} as const;
export type ApiName = keyof typeof API_KEYS;
export const API_NAMES = new Map<number, ApiName>(Object.entries(API_KEYS).map(([name, key]) => [key, name as ApiName]));

/** The first version of each api whose messages are flexible (KIP-482). Others are never decoded past the header. */
export const FIRST_FLEXIBLE: Record<ApiName, number> = {
  Produce: 9,
  Fetch: 12,
  Metadata: 9,
  OffsetCommit: 8,
  JoinGroup: 6,
  Heartbeat: 4,
  LeaveGroup: 4,
  SyncGroup: 4,
  SaslHandshake: Infinity,
  ApiVersions: 3,
  InitProducerId: 2,
  AddPartitionsToTxn: 3,
  AddOffsetsToTxn: 3,
  EndTxn: 3,
  TxnOffsetCommit: 3,
  SaslAuthenticate: 2,
  ConsumerGroupHeartbeat: 0,
};

/** A partition named by topic name, or by topic id (Produce v13+, OffsetCommit v10+) until a Metadata response names it. */
export interface TopicPartition {
  topic: string;
  /** Set when the request named the topic by id. */
  topicId?: string;
  partition: number;
}

/** One record batch of a Produce request, as its header says. */
export interface ProducedBatch extends TopicPartition {
  producerId: bigint;
  producerEpoch: number;
  transactional: boolean;
  control: boolean;
  records: number;
  baseSequence: number;
}

export type KafkaRequestBody =
  | { api: 'InitProducerId'; transactionalId: string | null }
  | { api: 'Produce'; transactionalId: string | null; acks: number; batches: ProducedBatch[] }
  | { api: 'AddPartitionsToTxn'; transactionalId: string; producerId: bigint; producerEpoch: number; partitions: TopicPartition[] }
  | { api: 'AddOffsetsToTxn'; transactionalId: string; producerId: bigint; producerEpoch: number; groupId: string }
  | { api: 'TxnOffsetCommit'; transactionalId: string; groupId: string; producerId: bigint; producerEpoch: number; offsets: Array<TopicPartition & { offset: bigint }> }
  | { api: 'EndTxn'; transactionalId: string; producerId: bigint; producerEpoch: number; committed: boolean }
  | { api: 'OffsetCommit'; groupId: string; offsets: Array<TopicPartition & { offset: bigint }> }
  /** memberId: the member the request speaks for, when the request names one (empty before a first join). */
  | { api: 'JoinGroup' | 'SyncGroup' | 'LeaveGroup' | 'Heartbeat' | 'ConsumerGroupHeartbeat'; groupId: string; memberId: string | null };

export type KafkaResponseBody =
  | { api: 'InitProducerId'; errorCode: number; producerId: bigint; producerEpoch: number }
  | { api: 'Produce'; partitions: Array<TopicPartition & { errorCode: number; baseOffset: bigint }> }
  | { api: 'EndTxn' | 'AddOffsetsToTxn'; errorCode: number }
  | { api: 'AddPartitionsToTxn' | 'TxnOffsetCommit' | 'OffsetCommit'; errorCodes: number[] }
  | { api: 'Metadata'; topicIds: Array<{ topic: string; topicId: string }> };

const NO_TOPIC_ID = '00000000-0000-0000-0000-000000000000';
/** The attributes bits of a record batch (Kafka's DefaultRecordBatch). */
const TRANSACTIONAL_BIT = 0x10;
const CONTROL_BIT = 0x20;
/** Bytes of a v2 record batch header up to and including its record count. */
const BATCH_HEADER_BYTES = 61;

type BodyReader<T> = (r: Reader, version: number, flexible: boolean) => T;

const str = (r: Reader, flexible: boolean) => r.readString(flexible);
const nullableStr = (r: Reader, flexible: boolean) => r.readNullableString(flexible);
/** An array of structures (each followed by its tagged fields when flexible). */
const array = <T>(r: Reader, flexible: boolean, item: (r: Reader) => T) => r.readArray((rr) => item(rr), flexible, flexible);
/** An array of int32s: no tagged fields after each. */
const int32s = (r: Reader, flexible: boolean) => r.readArray((rr) => rr.readInt32(), flexible, false);
/** A topic named by name, or by id from Produce v13 / OffsetCommit v10 on. */
const topicOf = (r: Reader, flexible: boolean, byId: boolean): { topic: string; topicId?: string } => {
  if (!byId) return { topic: str(r, flexible) };
  const topicId = r.readUUID();
  return { topic: '', topicId };
};

/**
 * The v2 record batches of one partition's records field (`size` bytes from the reader's
 * position): their headers only, read in place; the records themselves are skipped, never copied.
 */
function batchHeaders(r: Reader, size: number, at: TopicPartition): ProducedBatch[] {
  const batches: ProducedBatch[] = [];
  const end = r.position + size;
  if (size < 0 || end > r.length) throw new RangeError(`a records field of ${size} bytes runs past the frame`);
  for (let offset = r.position; offset + BATCH_HEADER_BYTES <= end; ) {
    const length = r.peekInt32(offset + 8);
    const magic = r.peekInt8(offset + 16);
    if (length < BATCH_HEADER_BYTES - 12 || magic !== 2) throw new RangeError(`a record batch of magic ${magic} and length ${length}`);
    const attributes = r.peekInt16(offset + 21);
    batches.push({
      ...at,
      producerId: r.peekInt64(offset + 43),
      producerEpoch: r.peekInt16(offset + 51),
      baseSequence: r.peekInt32(offset + 53),
      records: r.peekInt32(offset + 57),
      transactional: (attributes & TRANSACTIONAL_BIT) !== 0,
      control: (attributes & CONTROL_BIT) !== 0,
    });
    offset += 12 + length;
  }
  r.position = end;
  return batches;
}

const REQUESTS: Partial<Record<ApiName, BodyReader<KafkaRequestBody>>> = {
  InitProducerId: (r, _v, f) => ({ api: 'InitProducerId', transactionalId: nullableStr(r, f) }),
  Produce: (r, v, f) => {
    const transactionalId = v >= 3 ? nullableStr(r, f) : null;
    const acks = r.readInt16();
    r.readInt32(); // timeout
    const batches = array(r, f, (t) => {
      const topic = topicOf(t, f, v >= 13);
      return array(t, f, (p) => {
        const partition = p.readInt32();
        // The records field: nullable bytes, compact (length + 1) when flexible.
        const size = f ? p.readUnsignedVarInt() - 1 : p.readInt32();
        return size < 0 ? [] : batchHeaders(p, size, { ...topic, partition });
      }).flat();
    }).flat();
    return { api: 'Produce', transactionalId, acks, batches };
  },
  AddPartitionsToTxn: (r, v, f) => {
    // Versions 4 and up batch several transactions and are sent by brokers only.
    if (v >= 4) throw new RangeError('AddPartitionsToTxn v4+ is a broker-to-broker request');
    const transactionalId = str(r, f);
    const producerId = r.readInt64();
    const producerEpoch = r.readInt16();
    const partitions = array(r, f, (t) => {
      const topic = str(t, f);
      return int32s(t, f).map((partition) => ({ topic, partition }));
    }).flat();
    return { api: 'AddPartitionsToTxn', transactionalId, producerId, producerEpoch, partitions };
  },
  AddOffsetsToTxn: (r, _v, f) => ({ api: 'AddOffsetsToTxn', transactionalId: str(r, f), producerId: r.readInt64(), producerEpoch: r.readInt16(), groupId: str(r, f) }),
  TxnOffsetCommit: (r, v, f) => {
    const transactionalId = str(r, f);
    const groupId = str(r, f);
    const producerId = r.readInt64();
    const producerEpoch = r.readInt16();
    if (v >= 3) {
      r.readInt32(); // generation id
      str(r, f); // member id
      nullableStr(r, f); // group instance id
    }
    // From v6 (a Java client of Kafka 4.x) a topic is named by its id, as in OffsetCommit v10.
    const offsets = array(r, f, (t) => {
      const topic = topicOf(t, f, v >= 6);
      return array(t, f, (p) => {
        const partition = p.readInt32();
        const offset = p.readInt64();
        if (v >= 2) p.readInt32(); // committed leader epoch
        nullableStr(p, f); // metadata
        return { ...topic, partition, offset };
      });
    }).flat();
    return { api: 'TxnOffsetCommit', transactionalId, groupId, producerId, producerEpoch, offsets };
  },
  EndTxn: (r, _v, f) => ({ api: 'EndTxn', transactionalId: str(r, f), producerId: r.readInt64(), producerEpoch: r.readInt16(), committed: r.readBoolean() }),
  OffsetCommit: (r, v, f) => {
    const groupId = str(r, f);
    if (v >= 1) {
      r.readInt32(); // generation id
      str(r, f); // member id
    }
    if (v >= 7) nullableStr(r, f); // group instance id
    if (v >= 2 && v <= 4) r.readInt64(); // retention time
    const offsets = array(r, f, (t) => {
      const topic = topicOf(t, f, v >= 10);
      return array(t, f, (p) => {
        const partition = p.readInt32();
        const offset = p.readInt64();
        if (v >= 6) p.readInt32(); // committed leader epoch
        if (v === 1) p.readInt64(); // commit timestamp
        nullableStr(p, f); // metadata
        return { ...topic, partition, offset };
      });
    }).flat();
    return { api: 'OffsetCommit', groupId, offsets };
  },
  JoinGroup: (r, v, f) => {
    const groupId = str(r, f);
    r.readInt32(); // session timeout
    if (v >= 1) r.readInt32(); // rebalance timeout
    return { api: 'JoinGroup', groupId, memberId: str(r, f) || null };
  },
  // SyncGroup and Heartbeat: group id, generation id, member id.
  SyncGroup: (r, _v, f) => ({ api: 'SyncGroup', groupId: str(r, f), memberId: (r.readInt32(), str(r, f)) || null }),
  Heartbeat: (r, _v, f) => ({ api: 'Heartbeat', groupId: str(r, f), memberId: (r.readInt32(), str(r, f)) || null }),
  // From v3 a LeaveGroup names several members (a broker's batch); the group is what matters here.
  LeaveGroup: (r, v, f) => ({ api: 'LeaveGroup', groupId: str(r, f), memberId: v < 3 ? str(r, f) || null : null }),
  ConsumerGroupHeartbeat: (r, _v, f) => ({ api: 'ConsumerGroupHeartbeat', groupId: str(r, f), memberId: str(r, f) || null }),
};

const errorCodesOfTopics = (r: Reader, f: boolean, byId: boolean) =>
  array(r, f, (t) => {
    topicOf(t, f, byId);
    return array(t, f, (p) => {
      p.readInt32(); // partition
      return p.readInt16();
    });
  }).flat();

const RESPONSES: Partial<Record<ApiName, BodyReader<KafkaResponseBody>>> = {
  InitProducerId: (r) => {
    r.readInt32(); // throttle time
    return { api: 'InitProducerId', errorCode: r.readInt16(), producerId: r.readInt64(), producerEpoch: r.readInt16() };
  },
  EndTxn: (r) => {
    r.readInt32(); // throttle time
    return { api: 'EndTxn', errorCode: r.readInt16() };
  },
  AddOffsetsToTxn: (r) => {
    r.readInt32(); // throttle time
    return { api: 'AddOffsetsToTxn', errorCode: r.readInt16() };
  },
  AddPartitionsToTxn: (r, v, f) => {
    r.readInt32(); // throttle time
    if (v >= 4) throw new RangeError('AddPartitionsToTxn v4+ is a broker-to-broker response');
    return { api: 'AddPartitionsToTxn', errorCodes: errorCodesOfTopics(r, f, false) };
  },
  TxnOffsetCommit: (r, v, f) => {
    r.readInt32(); // throttle time
    return { api: 'TxnOffsetCommit', errorCodes: errorCodesOfTopics(r, f, v >= 6) };
  },
  OffsetCommit: (r, v, f) => {
    if (v >= 3) r.readInt32(); // throttle time
    return { api: 'OffsetCommit', errorCodes: errorCodesOfTopics(r, f, v >= 10) };
  },
  Produce: (r, v, f) => {
    const partitions = array(r, f, (t) => {
      const topic = topicOf(t, f, v >= 13);
      return array(t, f, (p) => {
        const partition = p.readInt32();
        const errorCode = p.readInt16();
        const baseOffset = p.readInt64();
        if (v >= 2) p.readInt64(); // log append time
        if (v >= 5) p.readInt64(); // log start offset
        if (v >= 8) {
          array(p, f, (e) => [e.readInt32(), nullableStr(e, f)]); // record errors
          nullableStr(p, f); // error message
        }
        return { ...topic, partition, errorCode, baseOffset };
      });
    }).flat();
    return { api: 'Produce', partitions };
  },
  Metadata: (r, v, f) => {
    if (v < 10) return { api: 'Metadata', topicIds: [] };
    r.readInt32(); // throttle time
    array(r, f, (b) => [b.readInt32(), str(b, f), b.readInt32(), nullableStr(b, f)]); // brokers
    nullableStr(r, f); // cluster id
    r.readInt32(); // controller id
    const topicIds = array(r, f, (t) => {
      t.readInt16(); // error code
      const topic = nullableStr(t, f) ?? '';
      const topicId = t.readUUID();
      t.readBoolean(); // is internal
      array(t, f, (p) => {
        p.readInt16();
        p.readInt32();
        p.readInt32();
        p.readInt32(); // error, index, leader, leader epoch (v7+)
        for (let k = 0; k < 3; k++) int32s(p, f); // replicas, isr, offline
      });
      t.readInt32(); // topic authorized operations (v8+)
      return { topic, topicId };
    });
    return { api: 'Metadata', topicIds: topicIds.filter((t) => t.topic && t.topicId !== NO_TOPIC_ID) };
  },
};

/** Reads a request body the relay cares about; null for any other api. Throws on a body that breaks its layout. */
export function readRequestBody(api: ApiName, version: number, body: DynamicBuffer): KafkaRequestBody | null {
  return readBody(REQUESTS[api], api, version, body);
}

/** Reads a response body the relay cares about; null for any other api. Throws on a body that breaks its layout. */
export function readResponseBody(api: ApiName, version: number, body: DynamicBuffer): KafkaResponseBody | null {
  return readBody(RESPONSES[api], api, version, body);
}

function readBody<T>(reader: BodyReader<T> | undefined, api: ApiName, version: number, body: DynamicBuffer): T | null {
  if (!reader) return null;
  const r = Reader.from(body);
  const value = reader(r, version, version >= FIRST_FLEXIBLE[api]);
  // A string read past the end returns what there is; the position tells.
  if (r.position > body.length) throw new RangeError(`${api} v${version} ends ${r.position - body.length} bytes early`);
  return value;
}
