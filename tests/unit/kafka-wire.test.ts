/**
 * The relay's Kafka decoder (lab-server/runner/wire/kafka-wire.ts) on frames written by the two
 * clients' own encoders: kafkajs's (the versions it sends, none flexible) and
 * @platformatic/kafka's (flexible versions, as newer clients send). Frames cut at every byte give
 * the same messages, and the bytes always come out as they went in.
 */
import { describe, expect, it } from 'vitest';
import { DynamicBuffer } from '@platformatic/dynamic-buffer';
import { Reader, Writer, endTxnV4, initProducerIdV5, produceV11, txnOffsetCommitV4, addPartitionsToTxnV3 } from '@platformatic/kafka';
import { produceRefusal } from '../../lab-server/runner/wire/kafka-answers.ts';
import { readResponseBody } from '../../lab-server/runner/wire/kafka-bodies.ts';
import { KafkaConnectionDecoder, type KafkaRequest, type KafkaResponse } from '../../lab-server/runner/wire/kafka-wire.ts';
import { segmentBuffers, WireProtocolError, type WireSegment } from '../../lab-server/runner/wire/contract.ts';
import { flexibleFrame, kafkajsFrame, kafkajsRequest, kafkajsResponse, Long } from '../support/kafka-frames.ts';

const pushAll = <M>(decoder: { push(chunk: Buffer): WireSegment<M>[] }, frames: Buffer[], bytewise = false) => {
  const all = Buffer.concat(frames);
  const chunks = bytewise ? [...all].map((b) => Buffer.from([b])) : [all];
  const segments = chunks.flatMap((c) => decoder.push(c));
  expect(Buffer.concat(segments.flatMap(segmentBuffers)).equals(all), 'the bytes come out as they went in').toBe(true);
  // Partial frames pass as segments of their own, without a message.
  return segments.map((s) => s.message).filter((m) => m !== null);
};

describe('Kafka requests as kafkajs writes them', () => {
  it('reads a transaction: InitProducerId, a transactional Produce, AddOffsetsToTxn, TxnOffsetCommit, EndTxn', async () => {
    const producerId = Long.fromString('4001');
    const frames = [
      await kafkajsFrame(1, kafkajsRequest('initProducerId', 1)({ transactionalId: 'tx-1', transactionTimeout: 30000 })),
      await kafkajsFrame(
        2,
        kafkajsRequest('produce', 7)({
          acks: -1,
          timeout: 30000,
          transactionalId: 'tx-1',
          producerId,
          producerEpoch: 3,
          topicData: [{ topic: 'out', partitions: [{ partition: 1, firstSequence: 0, messages: [{ key: 'a', value: '1' }, { key: 'b', value: '2' }] }] }],
        }),
      ),
      await kafkajsFrame(3, kafkajsRequest('addOffsetsToTxn', 1)({ transactionalId: 'tx-1', producerId, producerEpoch: 3, groupId: 'g' })),
      await kafkajsFrame(
        4,
        kafkajsRequest('txnOffsetCommit', 1)({ transactionalId: 'tx-1', groupId: 'g', producerId, producerEpoch: 3, topics: [{ topic: 'in', partitions: [{ partition: 0, offset: '42' }] }] }),
      ),
      await kafkajsFrame(5, kafkajsRequest('endTxn', 1)({ transactionalId: 'tx-1', producerId, producerEpoch: 3, transactionResult: true })),
    ];
    for (const bytewise of [false, true]) {
      const messages = pushAll(new KafkaConnectionDecoder().requests, frames, bytewise) as KafkaRequest[];
      expect(messages.map((m) => [m.api, m.apiVersion, m.correlationId, m.clientId])).toEqual([
        ['InitProducerId', 1, 1, 'kafkajs'],
        ['Produce', 7, 2, 'kafkajs'],
        ['AddOffsetsToTxn', 1, 3, 'kafkajs'],
        ['TxnOffsetCommit', 1, 4, 'kafkajs'],
        ['EndTxn', 1, 5, 'kafkajs'],
      ]);
      expect(messages[0]!.body).toEqual({ api: 'InitProducerId', transactionalId: 'tx-1' });
      expect(messages[1]!.body).toMatchObject({
        api: 'Produce',
        transactionalId: 'tx-1',
        acks: -1,
        batches: [{ topic: 'out', partition: 1, producerId: 4001n, producerEpoch: 3, transactional: true, control: false, records: 2, baseSequence: 0 }],
      });
      expect(messages[2]!.body).toEqual({ api: 'AddOffsetsToTxn', transactionalId: 'tx-1', producerId: 4001n, producerEpoch: 3, groupId: 'g' });
      expect(messages[3]!.body).toMatchObject({ api: 'TxnOffsetCommit', groupId: 'g', producerId: 4001n, offsets: [{ topic: 'in', partition: 0, offset: 42n }] });
      expect(messages[4]!.body).toEqual({ api: 'EndTxn', transactionalId: 'tx-1', producerId: 4001n, producerEpoch: 3, committed: true });
    }
  });

  it('reads a consumer commit and the group protocol, and passes other apis with their header only', async () => {
    const frames = [
      await kafkajsFrame(7, kafkajsRequest('offsetCommit', 3)({ groupId: 'g', groupGenerationId: 2, memberId: 'm', retentionTime: -1, topics: [{ topic: 'in', partitions: [{ partition: 2, offset: '9' }] }] })),
      await kafkajsFrame(8, kafkajsRequest('heartbeat', 1)({ groupId: 'g', groupGenerationId: 2, memberId: 'm' })),
      await kafkajsFrame(9, kafkajsRequest('metadata', 4)({ topics: ['in'], allowAutoTopicCreation: false })),
    ];
    const messages = pushAll(new KafkaConnectionDecoder().requests, frames) as KafkaRequest[];
    expect(messages[0]!.body).toEqual({ api: 'OffsetCommit', groupId: 'g', offsets: [{ topic: 'in', partition: 2, offset: 9n }] });
    expect(messages[1]!.body).toEqual({ api: 'Heartbeat', groupId: 'g', memberId: 'm' });
    expect(messages[2]).toMatchObject({ api: 'Metadata', apiVersion: 4, body: null });
  });
});

describe('Kafka requests in flexible versions, as @platformatic/kafka writes them', () => {
  it('reads InitProducerId v5, Produce v11, AddPartitionsToTxn v3, TxnOffsetCommit v4 and EndTxn v4', () => {
    const frames = [
      flexibleFrame(22, 5, 11, initProducerIdV5.createRequest('tx-2', 10000)),
      flexibleFrame(24, 3, 12, addPartitionsToTxnV3.createRequest([{ transactionalId: 'tx-2', producerId: 77n, producerEpoch: 1, topics: [{ name: 'out', partitions: [0, 2] }] }] as never)),
      flexibleFrame(0, 11, 13, produceV11.createRequest(-1, 1000, [{ topic: 'out', partition: 2, key: Buffer.from('k'), value: Buffer.from('v') }], { transactionalId: 'tx-2', producerId: 77n, producerEpoch: 1 } as never)),
      flexibleFrame(28, 4, 14, txnOffsetCommitV4.createRequest('tx-2', 'g2', 77n, 1, 5, 'member', null, [{ name: 'in', partitions: [{ partitionIndex: 1, committedOffset: 100n, committedLeaderEpoch: -1, committedMetadata: null }] }])),
      flexibleFrame(26, 4, 15, endTxnV4.createRequest('tx-2', 77n, 1, false)),
    ];
    for (const bytewise of [false, true]) {
      const messages = pushAll(new KafkaConnectionDecoder().requests, frames, bytewise) as KafkaRequest[];
      expect(messages.map((m) => m.body?.api)).toEqual(['InitProducerId', 'AddPartitionsToTxn', 'Produce', 'TxnOffsetCommit', 'EndTxn']);
      expect(messages[0]!.body).toEqual({ api: 'InitProducerId', transactionalId: 'tx-2' });
      expect(messages[1]!.body).toMatchObject({ producerId: 77n, partitions: [{ topic: 'out', partition: 0 }, { topic: 'out', partition: 2 }] });
      expect(messages[2]!.body).toMatchObject({ transactionalId: 'tx-2', batches: [{ topic: 'out', partition: 2, producerId: 77n, producerEpoch: 1, transactional: true, records: 1 }] });
      expect(messages[3]!.body).toMatchObject({ groupId: 'g2', offsets: [{ topic: 'in', partition: 1, offset: 100n }] });
      expect(messages[4]!.body).toMatchObject({ committed: false, producerId: 77n });
    }
  });
});

describe('Kafka responses', () => {
  it('are paired with their request by correlation id; InitProducerId and EndTxn are read', () => {
    const connection = new KafkaConnectionDecoder();
    connection.requests.push(flexibleFrame(22, 5, 21, initProducerIdV5.createRequest('tx-3', 10000)));
    connection.requests.push(flexibleFrame(26, 4, 22, endTxnV4.createRequest('tx-3', 5n, 0, true)));
    const response = (correlationId: number, body: Writer) => Writer.create().appendInt32(correlationId).appendTaggedFields().appendFrom(body).prependLength().buffer;
    const answers = connection.responses.push(Buffer.concat([
      response(22, Writer.create().appendInt32(0).appendInt16(0).appendTaggedFields()),
      response(21, Writer.create().appendInt32(0).appendInt16(0).appendInt64(5n).appendInt16(0).appendTaggedFields()),
      response(99, Writer.create().appendInt32(0)),
    ])).map((s) => s.message) as Array<KafkaResponse | null>;
    expect(answers[0]).toMatchObject({ correlationId: 22, api: 'EndTxn', body: { api: 'EndTxn', errorCode: 0 } });
    expect(answers[1]).toMatchObject({ correlationId: 21, api: 'InitProducerId', body: { producerId: 5n, producerEpoch: 0, errorCode: 0 } });
    expect(answers[2], 'an answer to no request passes unread').toBeNull();
  });
});

describe('bad frames', () => {
  it('refuse a frame over the limit, and a body the relay must read but cannot, with one line each', async () => {
    const big = Buffer.alloc(8);
    big.writeInt32BE(64 * 1024 * 1024);
    expect(() => new KafkaConnectionDecoder().requests.push(big)).toThrow(WireProtocolError);
    expect(() => new KafkaConnectionDecoder().requests.push(big)).toThrow(/Kafka request of 67108864 bytes is over the relay's limit of 16 MiB/);
    const endTxn = await kafkajsFrame(5, kafkajsRequest('endTxn', 1)({ transactionalId: 'tx-1', producerId: Long.fromInt(1), producerEpoch: 0, transactionResult: true }));
    const truncated = Buffer.concat([endTxn.subarray(0, endTxn.length - 3)]);
    truncated.writeInt32BE(truncated.length - 4);
    expect(() => new KafkaConnectionDecoder().requests.push(truncated)).toThrow(/the relay cannot read this EndTxn v1 request/);
  });

  it('pass an unknown api key and a short frame untouched', () => {
    const unknown = Writer.create().appendInt16(9999).appendInt16(0).appendInt32(1).appendString('x', false).appendInt32(7).prependLength().buffer;
    const short = Buffer.from([0, 0, 0, 2, 1, 2]);
    expect(pushAll(new KafkaConnectionDecoder().requests, [unknown, short])).toEqual([]);
  });
});

describe("the relay's refusal of a Produce (an injected send error)", () => {
  const batch = (topic: string, partition: number, topicId?: string) => ({ topic, ...(topicId ? { topicId } : {}), partition, producerId: 5n, producerEpoch: 0, transactional: true, control: false, records: 3, baseSequence: 0 });
  const request = { api: 'Produce' as const, transactionalId: 'tx', acks: -1, batches: [batch('out', 0), batch('out', 2), batch('audit', 1)] };
  const body = (frame: Buffer, version: number) => {
    const flexible = version >= 9;
    const at = flexible ? 9 : 8; // size, correlation id, and the header's empty tagged fields when flexible
    return readResponseBody('Produce', version, new DynamicBuffer(frame.subarray(at)));
  };

  it('is read back by the relay as INVALID_RECORD for every partition, in every version a client sends', () => {
    for (const version of [3, 5, 7, 8, 9, 11]) {
      const { frame } = produceRefusal(request, 42, version);
      expect(frame.readInt32BE(0), `v${version}: the size prefix`).toBe(frame.length - 4);
      expect(frame.readInt32BE(4)).toBe(42);
      expect(body(frame, version), `v${version}`).toEqual({
        api: 'Produce',
        partitions: [
          { topic: 'out', partition: 0, errorCode: 87, baseOffset: -1n },
          { topic: 'out', partition: 2, errorCode: 87, baseOffset: -1n },
          { topic: 'audit', partition: 1, errorCode: 87, baseOffset: -1n },
        ],
      });
    }
    const topicId = '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0';
    const { frame: byId } = produceRefusal({ ...request, batches: [batch('', 0, topicId)] }, 7, 13);
    expect(body(byId, 13)).toEqual({ api: 'Produce', partitions: [{ topic: '', topicId, partition: 0, errorCode: 87, baseOffset: -1n }] });
  });

  it("is a final error to kafkajs's and @platformatic/kafka's own response parsers", async () => {
    const kafkajs = kafkajsResponse('produce', 7);
    const decoded = await kafkajs.decode(produceRefusal(request, 1, 7).frame.subarray(8));
    await expect(kafkajs.parse(decoded)).rejects.toMatchObject({ type: 'INVALID_RECORD', retriable: false });
    const { frame } = produceRefusal(request, 1, 11);
    expect(() => produceV11.parseResponse(1, 0, 11, Reader.from(new DynamicBuffer(frame.subarray(9))))).toThrow(
      expect.objectContaining({ errors: expect.arrayContaining([expect.objectContaining({ apiId: 'INVALID_RECORD' })]) }),
    );
  });
});
