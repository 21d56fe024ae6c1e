/**
 * The __transaction_state decoder (lab-server/kafka/transaction-log.ts) on hand-built records:
 * version-0 values, tombstones, other record types and damaged values. tests/monitor-grading.test.ts
 * decodes the real broker's own records.
 */
import { describe, expect, it } from 'vitest';
import { decodeTransactionLogKey, decodeTransactionLogValue, TransactionLogFormatError } from '../../lab-server/kafka/transaction-log.ts';

describe('__transaction_state decoding by hand', () => {
  /** A version-0 value: classic int16 string lengths and int32 array lengths, no tagged fields. */
  function v0Value(): Buffer {
    const topic = Buffer.from('orders');
    const parts = [
      Buffer.from([0, 0]), // version 0
      Buffer.from('00000000000000070003000093e001', 'hex'), // producerId 7, epoch 3, timeout 37856, state 1 (Ongoing)
      Buffer.from('00000001', 'hex'), // one topic
      Buffer.from([0, topic.length]),
      topic,
      Buffer.from('000000020000000000000002', 'hex'), // partitions [0, 2]
      Buffer.alloc(8, 0), // last update
      Buffer.from('0000000000000064', 'hex'), // start 100
    ];
    const b = Buffer.concat(parts);
    b.writeBigInt64BE(200n, b.length - 16);
    return b;
  }

  it('reads version 0 values', () => {
    expect(decodeTransactionLogValue(v0Value())).toEqual({
      version: 0,
      producerId: 7n,
      producerEpoch: 3,
      timeoutMs: 37_856,
      state: 'Ongoing',
      partitions: [{ topic: 'orders', partitions: [0, 2] }],
      lastUpdateMs: 200,
      startMs: 100,
    });
  });

  it('treats tombstones, other record types and damaged values as such', () => {
    expect(decodeTransactionLogValue(null)).toBeNull();
    expect(decodeTransactionLogKey(Buffer.from('00010003616263', 'hex'))).toBeNull();
    expect(decodeTransactionLogKey(Buffer.from('00000003616263', 'hex'))).toBe('abc');
    expect(() => decodeTransactionLogValue(v0Value().subarray(0, 20))).toThrow(TransactionLogFormatError);
    const future = v0Value();
    future.writeInt16BE(9, 0);
    expect(() => decodeTransactionLogValue(future)).toThrow(/version 9/);
  });
});
