/**
 * The wire tap (lab-server/runner/wire/wire-tap.ts) on Kafka frames as kafkajs writes them: the
 * crash point of each message, an armed point held until the runner releases or drops it, and
 * "inside a transaction" only for a transaction that carries the batch.
 */
import { describe, expect, it } from 'vitest';
import { createRecordsBatch, Writer } from '@platformatic/kafka';
import { segmentBuffers } from '../../lab-server/runner/wire/contract.ts';
import { WireTap } from '../../lab-server/runner/wire/wire-tap.ts';
import type { ChildEvent } from '../../lab-server/runner/program/child/protocol.ts';
import { flexibleFrame, kafkajsFrame, kafkajsRequest, Long, responseFrame } from '../support/kafka-frames.ts';

const producerId = Long.fromString('7001');
const TX = 'tx-i1';

/** A tapped Kafka connection, with every event the tap emits. */
function tapped() {
  const tap = new WireTap();
  const events: ChildEvent[] = [];
  tap.on('event', (e) => events.push(e));
  const connection = tap.connection('kafka');
  /** Decodes a request frame and asks the tap what to do with it. */
  const request = (frame: Buffer) => connection.request(connection.requests.push(frame)[0]!.message);
  const response = (frame: Buffer) => connection.response(connection.responses.push(frame)[0]!.message);
  return { tap, events, connection, request, response };
}

const init = (c: number) => kafkajsFrame(c, kafkajsRequest('initProducerId', 1)({ transactionalId: TX, transactionTimeout: 30000 }));
const initAnswer = (c: number) => responseFrame(c, Writer.create().appendInt32(0).appendInt16(0).appendInt64(7001n).appendInt16(0), false);
const produce = (c: number, records: number, transactionalId: string | null = TX, acks = -1) =>
  kafkajsFrame(
    c,
    kafkajsRequest('produce', 3)({
      acks,
      timeout: 1000,
      transactionalId,
      producerId,
      producerEpoch: 0,
      topicData: [{ topic: 'out', partitions: [{ partition: 0, firstSequence: 0, messages: Array.from({ length: records }, (_, i) => ({ key: `k${i}`, value: 'v' })) }] }],
    }),
  );
const produceAnswer = (c: number, errorCode = 0) =>
  responseFrame(
    c,
    Writer.create()
      .appendArray([0], (w) => w.appendString('out', false).appendArray([0], (p) => p.appendInt32(0).appendInt16(errorCode).appendInt64(5n).appendInt64(-1n), false, false), false, false)
      .appendInt32(0),
    false,
  );
const offsets = (c: number) =>
  kafkajsFrame(c, kafkajsRequest('txnOffsetCommit', 0)({ transactionalId: TX, groupId: 'g', producerId, producerEpoch: 0, topics: [{ topic: 'in', partitions: [{ partition: 0, offset: '10' }] }] }));
const endTxn = (c: number, commit: boolean) => kafkajsFrame(c, kafkajsRequest('endTxn', 0)({ transactionalId: TX, producerId, producerEpoch: 0, transactionResult: commit }));
const endTxnAnswer = (c: number) => responseFrame(c, Writer.create().appendInt32(0).appendInt16(0), false);

async function openTransaction(t: ReturnType<typeof tapped>, records: number) {
  t.request(await init(1));
  t.response(initAnswer(1));
  t.request(await produce(2, records));
}

describe('the wire tap', () => {
  it('names each call of a transaction by its crash point, with the transaction open between', async () => {
    const t = tapped();
    await openTransaction(t, 3);
    t.response(produceAnswer(2));
    expect(t.tap.transactionWithRecordsOpen).toBe(true);
    t.request(await offsets(3));
    t.request(await endTxn(4, true));
    t.response(endTxnAnswer(4));
    const calls = t.events.filter((e) => e.t === 'call');
    expect(calls.map((e) => [e.point, e.txnOpen])).toEqual([
      ['before:send', true],
      ['after:send', true],
      ['before:sendOffsets', true],
      ['before:commit', true],
      ['after:commit', false],
    ]);
    expect(calls.at(-1)).toMatchObject({ records: 3, written: ['out'], transactionalId: TX });
    expect(t.tap.transactionWithRecordsOpen).toBe(false);
  });

  it('names the producer of an open transaction carrying records, for a fault that hit no point; none once it ends or while it aborts', async () => {
    const t = tapped();
    expect(t.tap.openTransactionCarryingRecords()).toBeNull();
    await openTransaction(t, 2);
    t.response(produceAnswer(2));
    expect(t.tap.openTransactionCarryingRecords()).toEqual({ transactionalId: TX });
    t.request(await endTxn(3, false));
    expect(t.tap.openTransactionCarryingRecords()).toBeNull();
    t.response(endTxnAnswer(3));
    expect(t.tap.openTransactionCarryingRecords()).toBeNull();
  });

  it('holds the armed point until released, and drops it when the instance is killed', async () => {
    const t = tapped();
    t.tap.command({ t: 'arm', point: 'after:send', action: 'pause', occurrence: 1 });
    await openTransaction(t, 2);
    const held = t.response(produceAnswer(2));
    expect(held).toBeInstanceOf(Promise);
    expect(t.events.find((e) => e.t === 'hit')).toMatchObject({ point: 'after:send', action: 'pause', txnOpen: true, transactionalId: TX });
    t.tap.command({ t: 'continue' });
    expect(await held).toBe('forward');

    const k = tapped();
    k.tap.command({ t: 'arm', point: 'before:commit', action: 'kill', occurrence: 1 });
    await openTransaction(k, 2);
    k.request(await offsets(3));
    const killed = k.request(await endTxn(4, true));
    k.tap.dropHeld();
    expect(await killed).toBe('drop');
  });

  it('counts a hit as inside a transaction only when the transaction carries records, and from sendOffsets on the offsets too', async () => {
    const t = tapped();
    t.tap.command({ t: 'arm', point: 'before:commit', action: 'kill', occurrence: 1 });
    await openTransaction(t, 1);
    // No TxnOffsetCommit: the commit would carry output without the input it came from.
    void t.request(await endTxn(4, true));
    expect(t.events.find((e) => e.t === 'hit')).toMatchObject({ point: 'before:commit', txnOpen: false });

    const plain = tapped();
    plain.tap.command({ t: 'arm', point: 'after:send', action: 'kill', occurrence: 1 });
    plain.request(await produce(2, 4, null));
    void plain.response(produceAnswer(2));
    expect(plain.events.find((e) => e.t === 'hit'), 'a send outside any transaction').toMatchObject({ point: 'after:send', txnOpen: false });
  });

  it("answers an armed send error in the broker's place: the Produce never reaches it, and the refusal keeps the broker's order", async () => {
    const t = tapped();
    let woken = 0;
    t.connection.wakeResponses = () => woken++;
    await openTransaction(t, 2); // its Produce (correlation 2) is on its way, unanswered
    t.tap.command({ t: 'arm', point: 'before:send', action: 'error', occurrence: 1 });
    const frame = await produce(3, 4);
    expect(t.connection.requests.push(frame.subarray(0, 20)), 'held whole: no byte forwarded before the last').toEqual([]);
    const [segment, ...more] = t.connection.requests.push(frame.subarray(20));
    expect(more).toEqual([]);
    expect(Buffer.concat(segmentBuffers(segment!))).toEqual(frame);
    expect(await t.connection.request(segment!.message)).toBe('answered');
    expect(woken).toBe(1);
    expect(t.events.find((e) => e.t === 'hit')).toMatchObject({ point: 'before:send', action: 'error', txnOpen: true, transactionalId: TX });
    // The refusal waits for the broker's answer to the Produce sent before it.
    expect(t.connection.responses.push(Buffer.alloc(0))).toEqual([]);
    const [broker, relay] = t.connection.responses.push(produceAnswer(2));
    expect(broker!.message).toMatchObject({ correlationId: 2 });
    expect(relay!.message).toMatchObject({ correlationId: 3, byRelay: true });
    expect(Buffer.concat(segmentBuffers(relay!)).readInt32BE(4)).toBe(3);
    t.connection.response(broker!.message);
    expect(t.connection.response(relay!.message)).toBeNull();
    expect(t.events.find((e) => e.t === 'failed')).toMatchObject({ op: 'send', error: 'INVALID_RECORD' });
    // The refused records never joined the transaction: a commit now carries the first send's 2 only.
    t.request(await endTxn(4, true));
    t.response(endTxnAnswer(4));
    expect(t.events.filter((e) => e.t === 'call').at(-1)).toMatchObject({ point: 'after:commit', records: 2 });
  });

  it('lets a send error pass a Produce that began before the arm (its first bytes are with the broker) and refuses the next', async () => {
    const t = tapped();
    await openTransaction(t, 1);
    t.response(produceAnswer(2));
    const early = await produce(3, 1);
    expect(t.connection.requests.push(early.subarray(0, 20))).toHaveLength(1);
    t.tap.command({ t: 'arm', point: 'before:send', action: 'error', occurrence: 1 });
    const [rest] = t.connection.requests.push(early.subarray(20));
    expect(t.connection.request(rest!.message)).toBeNull();
    const [next] = t.connection.requests.push(await produce(4, 1));
    expect(await t.connection.request(next!.message)).toBe('answered');
    // Nothing is before it in flight but the early Produce: its refusal follows that answer at once.
    const [, refusal] = t.connection.responses.push(produceAnswer(3));
    expect(refusal!.message).toMatchObject({ correlationId: 4, byRelay: true });
  });

  it('never answers a Produce with acks=0, which a broker does not answer either', async () => {
    const t = tapped();
    t.tap.command({ t: 'arm', point: 'before:send', action: 'error', occurrence: 1 });
    const [unanswered] = t.connection.requests.push(await produce(1, 1, null, 0));
    expect(t.connection.request(unanswered!.message)).toBeNull();
    expect(t.events.some((e) => e.t === 'hit')).toBe(false);
    const [next] = t.connection.requests.push(await produce(2, 1, null));
    expect(await t.connection.request(next!.message)).toBe('answered');
  });

  it('reports a call the broker refused as failed, by the error name, and never holds it', async () => {
    const t = tapped();
    t.tap.command({ t: 'arm', point: 'after:send', action: 'kill', occurrence: 1 });
    await openTransaction(t, 1);
    expect(t.response(produceAnswer(2, 47))).toBeNull();
    expect(t.events.find((e) => e.t === 'failed')).toMatchObject({ op: 'send', error: 'INVALID_PRODUCER_EPOCH' });
    expect(t.events.some((e) => e.t === 'hit')).toBe(false);
  });

  it('counts occurrences and aims at a topic', async () => {
    const t = tapped();
    t.tap.command({ t: 'arm', point: 'before:send', action: 'kill', occurrence: 2, topic: 'out' });
    await openTransaction(t, 1);
    expect(t.events.some((e) => e.t === 'hit')).toBe(false);
    expect(t.request(await produce(3, 1))).toBeInstanceOf(Promise);
    const other = tapped();
    other.tap.command({ t: 'arm', point: 'before:send', action: 'kill', occurrence: 1, topic: 'elsewhere' });
    await openTransaction(other, 1);
    expect(other.events.some((e) => e.t === 'hit')).toBe(false);
  });

  it('aims an HTTP point at one path of the API: its request before, its answer after, whatever the query', () => {
    const tap = new WireTap();
    const events: ChildEvent[] = [];
    tap.on('event', (e) => events.push(e));
    const http = tap.connection('http');
    const send = (head: string) => http.request(http.requests.push(Buffer.from(head))[0]!.message);
    const answer = () => http.response(http.responses.push(Buffer.from('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'))[0]!.message);
    const post = (path: string) => `POST ${path} HTTP/1.1\r\nhost: api\r\ncontent-length: 0\r\n\r\n`;
    tap.command({ t: 'arm', point: 'after:http', action: 'kill', occurrence: 1, path: '/a/kiq-1/inventory/releases' });
    // Two requests in flight: the first answer belongs to the reservation, so it passes.
    expect(send(post('/a/kiq-1/inventory/reservations'))).toBeNull();
    expect(send(post('/a/kiq-1/inventory/releases?retry=1'))).toBeNull();
    expect(answer()).toBeNull();
    expect(answer()).toBeInstanceOf(Promise);
    expect(events.filter((e) => e.t === 'hit')).toEqual([{ t: 'hit', point: 'after:http', action: 'kill', txnOpen: false }]);
    // A path that only ends like the armed one is another path.
    tap.command({ t: 'arm', point: 'before:http', action: 'kill', occurrence: 1, path: '/a/kiq-1/inventory/releases' });
    const other = tap.connection('http');
    expect(other.request(other.requests.push(Buffer.from(post('/x/a/kiq-1/inventory/releases')))[0]!.message)).toBeNull();
    expect(other.request(other.requests.push(Buffer.from(post('http://api:80/a/kiq-1/inventory/releases')))[0]!.message)).toBeInstanceOf(Promise);
  });

  it('closes an HTTP connection that sends more than 64 requests without waiting for an answer', () => {
    const http = new WireTap().connection('http');
    const send = () => http.request(http.requests.push(Buffer.from('GET /a HTTP/1.1\r\nhost: api\r\n\r\n'))[0]!.message);
    for (let i = 0; i < 64; i++) send();
    expect(send).toThrow(/more than 64 HTTP requests/);
  });

  it('announces a group membership once, from the member id the client sends', async () => {
    const t = tapped();
    for (const c of [1, 2]) t.request(await kafkajsFrame(c, kafkajsRequest('heartbeat', 1)({ groupId: 'g', groupGenerationId: 1, memberId: 'm-1' })));
    expect(t.events.filter((e) => e.t === 'member')).toEqual([{ t: 'member', groupId: 'g', memberId: 'm-1' }]);
  });
});


describe('a fenced zombie', () => {
  it('fails its sendOffsets on the AddOffsetsToTxn the coordinator refuses, before any TxnOffsetCommit', async () => {
    const t = tapped();
    await openTransaction(t, 1);
    t.request(await kafkajsFrame(3, kafkajsRequest('addOffsetsToTxn', 0)({ transactionalId: TX, producerId, producerEpoch: 0, groupId: 'g' })));
    t.response(responseFrame(3, Writer.create().appendInt32(0).appendInt16(47), false));
    expect(t.events.find((e) => e.t === 'failed')).toMatchObject({ op: 'sendOffsets', error: 'INVALID_PRODUCER_EPOCH' });
  });

  it('holds no transaction once the broker says it was fenced: the newer epoch aborted it', async () => {
    const t = tapped();
    await openTransaction(t, 2);
    t.response(produceAnswer(2));
    expect(t.tap.transactionWithRecordsOpen).toBe(true);
    t.request(await kafkajsFrame(3, kafkajsRequest('addOffsetsToTxn', 0)({ transactionalId: TX, producerId, producerEpoch: 0, groupId: 'g' })));
    t.response(responseFrame(3, Writer.create().appendInt32(0).appendInt16(47), false));
    expect(t.tap.transactionWithRecordsOpen).toBe(false);
    expect(t.tap.openTransactionCarryingRecords()).toBeNull();
  });

  it('still holds it after a refusal that fences nothing (the coordinator busy with the last markers)', async () => {
    const t = tapped();
    await openTransaction(t, 2);
    t.response(produceAnswer(2));
    t.request(await kafkajsFrame(3, kafkajsRequest('addOffsetsToTxn', 0)({ transactionalId: TX, producerId, producerEpoch: 0, groupId: 'g' })));
    t.response(responseFrame(3, Writer.create().appendInt32(0).appendInt16(51), false));
    expect(t.tap.transactionWithRecordsOpen).toBe(true);
  });

  it('holds no transaction once its EndTxn or a send is refused as fenced (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH)', async () => {
    const ended = tapped();
    await openTransaction(ended, 2);
    ended.response(produceAnswer(2));
    ended.request(await endTxn(3, true));
    ended.response(responseFrame(3, Writer.create().appendInt32(0).appendInt16(90), false));
    expect(ended.tap.transactionWithRecordsOpen).toBe(false);
    // The first send went through; the second is refused as fenced: the first one's records are aborted too.
    const sent = tapped();
    await openTransaction(sent, 2);
    sent.response(produceAnswer(2));
    sent.request(await produce(3, 1));
    sent.response(produceAnswer(3, 47));
    expect(sent.tap.transactionWithRecordsOpen).toBe(false);
    expect(sent.tap.openTransactionCarryingRecords()).toBeNull();
  });
});

describe('topics named by id', () => {
  it('are named again from the Metadata answer that gave the id, for a topic-aimed fault', async () => {
    const t = tapped();
    const topicId = '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0';
    // Metadata v12 (flexible) asked for, then its answer: one topic with its id.
    t.request(flexibleFrame(3, 12, 1, Writer.create().appendArray([], () => {}).appendBoolean(false).appendBoolean(false)));
    const metadata = Writer.create()
      .appendInt32(0)
      .appendArray([], () => {})
      .appendString(null)
      .appendInt32(1)
      .appendArray([0], (w) => w.appendInt16(0).appendString('out').appendUUID(topicId).appendBoolean(false).appendArray([], () => {}).appendInt32(0))
      .appendTaggedFields();
    t.response(responseFrame(1, metadata));
    t.tap.command({ t: 'arm', point: 'before:send', action: 'kill', occurrence: 1, topic: 'out' });
    // A transactional Produce v13: the topic by id.
    const records = createRecordsBatch([{ topic: 'out', partition: 0, key: Buffer.from('k'), value: Buffer.from('v') }] as never, { transactionalId: TX, producerId: 7001n, producerEpoch: 0 } as never);
    const produce = Writer.create()
      .appendString(TX)
      .appendInt16(-1)
      .appendInt32(1000)
      .appendArray([0], (w) => w.appendUUID(topicId).appendArray([0], (p) => p.appendInt32(0).appendUnsignedVarInt(records.length + 1).appendFrom(records)))
      .appendTaggedFields();
    const held = t.request(flexibleFrame(0, 13, 2, produce));
    expect(held).toBeInstanceOf(Promise);
    expect(t.events.find((e) => e.t === 'call')).toMatchObject({ point: 'before:send', records: 1 });
  });
});
