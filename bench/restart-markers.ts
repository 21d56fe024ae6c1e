/**
 * npm run bench:restart-markers — does a clean broker restart leave a committed transaction
 * without its markers? Several transactional producers commit in a tight loop (records to an
 * output topic plus their group's offsets, as every lab program does) while the single-node
 * broker is restarted again and again, as the grader's broker-restart fault does. Afterwards,
 * with every producer gone and its transaction timeout long over, a partition whose last stable
 * offset is still below its high watermark holds a hanging transaction, which no client can ever
 * finish. Prints the count of those partitions and of the broker's "markers skipped" log lines.
 *
 * Why: Kafka 4.4's transaction marker sender treats a partition with no leader in its metadata
 * cache as deleted, drops its markers and completes the transaction (KAFKA-20734). On the only
 * broker of a cluster, a restart makes exactly that state while commits are in flight; the broker
 * carries a patch for it (broker/src/main/java/dev/kafkaiq/broker/BrokerPatches.java).
 *
 *   npm run bench:restart-markers -- [--restarts 20] [--producers 6]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { BrokerProcess } from '../lab-server/broker/broker-process.ts';
import { ensureBrokerJars } from '../lab-server/broker/jars.ts';
import { createKafka } from '../lab-server/kafka/client.ts';
import { OffsetsProbe } from '../lab-server/kafka/inspect.ts';
import { median } from './median.ts';

const { values } = parseArgs({ options: { restarts: { type: 'string', default: '20' }, producers: { type: 'string', default: '6' } } });
const restarts = Number(values.restarts);
const producers = Number(values.producers);
const port = Number(process.env.BENCH_BROKER_PORT ?? 9692);
const TRANSACTION_TIMEOUT_MS = 8_000;
const OFFSETS_TOPIC = '__consumer_offsets';

await ensureBrokerJars();
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-bench-markers-'));
const broker = new BrokerProcess({ basePort: port, dataDir });
await broker.start();
const kafka = createKafka(broker.brokers, 'bench-markers', { retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 500 } });
const admin = kafka.admin();
await admin.connect();
const topics = Array.from({ length: producers }, (_, i) => [`bench-in-${i}`, `bench-out-${i}`]).flat();
await admin.createTopics({ topics: topics.map((topic) => ({ topic, numPartitions: 3 })), waitForLeaders: true });
await admin.disconnect();

let stopping = false;
const commits = new Array<number>(producers).fill(0);
const failures = new Array<number>(producers).fill(0);

/** One transactional loop: a fresh producer after any error, as a lab program's restart would. */
async function commitLoop(index: number): Promise<void> {
  while (!stopping) {
    const producer = kafka.producer({ transactionalId: `bench-tx-${index}`, maxInFlightRequests: 1, idempotent: true, transactionTimeout: TRANSACTION_TIMEOUT_MS });
    try {
      await producer.connect();
      while (!stopping) {
        const txn = await producer.transaction();
        try {
          const n = commits[index]!;
          await txn.send({ topic: `bench-out-${index}`, messages: [0, 1, 2].map((p) => ({ partition: p, key: `${p}`, value: `${n}` })) });
          await txn.sendOffsets({ consumerGroupId: `bench-group-${index}`, topics: [{ topic: `bench-in-${index}`, partitions: [{ partition: 0, offset: String(n + 1) }] }] });
          await txn.commit();
          commits[index]!++;
        } catch (err) {
          await txn.abort().catch(() => undefined); // the producer is replaced below either way
          throw err;
        }
      }
    } catch {
      failures[index]!++;
      await sleep(200);
    } finally {
      await producer.disconnect().catch(() => undefined); // a dead connection has nothing to close
    }
  }
}

const loops = Array.from({ length: producers }, (_, i) => commitLoop(i));
const restartTimes: number[] = [];
for (let i = 0; i < restarts; i++) {
  await sleep(1_500 + Math.random() * 1_500);
  const started = Date.now();
  await broker.restart();
  restartTimes.push(Date.now() - started);
  process.stdout.write(`restart ${i + 1}/${restarts}: ${((Date.now() - started) / 1000).toFixed(1)} s, commits so far ${commits.reduce((a, b) => a + b, 0)}\n`);
}
await sleep(2_000);
stopping = true;
await Promise.all(loops);

// Every producer is gone: after its transaction timeout the coordinator aborts what it left open.
await sleep(TRANSACTION_TIMEOUT_MS + 6_000);
const probe = new OffsetsProbe(broker.brokers);
const hanging: string[] = [];
for (const topic of [OFFSETS_TOPIC, ...topics.filter((t) => t.startsWith('bench-out-'))]) {
  for (const p of await probe.offsets(topic)) if (p.lso < p.hwm) hanging.push(`${topic}-${p.partition} (lso ${p.lso} < hwm ${p.hwm})`);
}
const log = fs.readFileSync(path.join(dataDir, 'node-1.log'), 'utf8');
fs.writeFileSync(path.join(os.tmpdir(), 'kafkaiq-bench-markers-last.log'), log);
const skipped = log.split('\n').filter((line) => line.includes("Couldn't find leader endpoint")).length;
await broker.stop();
fs.rmSync(dataDir, { recursive: true, force: true });

console.log(`${restarts} broker restarts under ${producers} committing producers: ${commits.reduce((a, b) => a + b, 0)} commits, ${failures.reduce((a, b) => a + b, 0)} producer restarts, median restart ${(median(restartTimes) / 1000).toFixed(1)} s`);
console.log(`markers skipped by the broker ("Couldn't find leader endpoint"): ${skipped}`);
console.log(`partitions left with a hanging transaction: ${hanging.length}${hanging.length ? `: ${hanging.join(', ')}` : ''}`);
process.exit(0);
