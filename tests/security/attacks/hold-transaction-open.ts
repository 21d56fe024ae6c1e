// Attack: leave a transaction open for as long as the broker allows, then be stopped. Until it
// times out, read_committed readers of the partition stall at its first offset, and the
// coordinator keeps its state. The attempt's end must fence the id, which aborts it at once.
import { Kafka } from 'kafkajs';
const kafka = new Kafka({ clientId: 'holder', brokers: process.env.KAFKA_BROKERS!.split(',') });
const producer = kafka.producer({ transactionalId: process.env.TRANSACTIONAL_ID!, idempotent: true, maxInFlightRequests: 1, transactionTimeout: 600_000 });
await producer.connect();
const txn = await producer.transaction();
await txn.send({ topic: process.env.OUTPUT_TOPIC!, messages: [{ key: 'held', value: 'open until fenced' }] });
console.log('RESULT ' + JSON.stringify({ allowed: true, refusal: 'holding a transaction open' }));
await new Promise(() => {}); // never commits; stays up until stopped
