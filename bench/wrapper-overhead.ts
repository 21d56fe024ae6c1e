/**
 * npm run bench:wrapper [-- --transactions N --sends S --records M --rounds R]
 * What the grader's client wrapper costs a program, for each Kafka client: the same transactional
 * producer loop (N transactions of S sends of M records each, then commit: the wrapper's work is
 * per call, so many calls per transaction; a transaction's own cost is mostly the broker's and the
 * clients' retry backoff on CONCURRENT_TRANSACTIONS right after the previous commit) bundled once through the lab runtime
 * (compile.ts: the wrapper reports every call over IPC, as in a grade) and once against the plain
 * client, run alternately R times each on the broker of KAFKAIQ_BROKER_PORT. Prints records/s
 * (median) per client and variant, and the wrapper's overhead. Prints figures; asserts nothing.
 */
import { fork } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import * as esbuild from 'esbuild';
import { Kafka, logLevel } from 'kafkajs';
import { ClusterPool } from '../lab-server/broker/cluster-pool.ts';
import { ROOT_DIR } from '../lab-server/core/paths.ts';
import { compileProgram } from '../lab-server/runner/program/compile.ts';
import type { KafkaClient } from '../src/shared/clients.ts';
import { median } from './median.ts';

const { values } = parseArgs({
  options: {
    transactions: { type: 'string', default: '20' },
    sends: { type: 'string', default: '50' },
    records: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '5' },
  },
});
const transactions = Number(values.transactions);
const sends = Number(values.sends);
const records = Number(values.records);
const rounds = Number(values.rounds);

const PROGRAMS: Record<KafkaClient, string> = {
  kafkajs: `
import { Kafka, logLevel } from 'kafkajs';
const kafka = new Kafka({ clientId: 'bench', brokers: process.env.KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING, retry: { initialRetryTime: 50 } });
const producer = kafka.producer({ transactionalId: process.env.TRANSACTIONAL_ID!, idempotent: true, maxInFlightRequests: 1 });
await producer.connect();
const topic = process.env.OUTPUT_TOPIC!;
const t0 = performance.now();
for (let i = 0; i < ${transactions}; i++) {
  const txn = await producer.transaction();
  for (let s = 0; s < ${sends}; s++) await txn.send({ topic, messages: Array.from({ length: ${records} }, (_, j) => ({ key: 'k', value: 'v' + i + '-' + s + '-' + j })) });
  await txn.commit();
}
console.log(JSON.stringify({ ms: performance.now() - t0 }));
await producer.disconnect();
process.exit(0);
`,
  platformatic: `
import { Producer, stringSerializers } from '@platformatic/kafka';
const producer = new Producer({ clientId: 'bench', bootstrapBrokers: process.env.KAFKA_BROKERS!.split(','), idempotent: true, transactionalId: process.env.TRANSACTIONAL_ID!, serializers: stringSerializers, retryDelay: 50 });
const topic = process.env.OUTPUT_TOPIC!;
const t0 = performance.now();
for (let i = 0; i < ${transactions}; i++) {
  const txn = await producer.beginTransaction();
  for (let s = 0; s < ${sends}; s++) await txn.send({ messages: Array.from({ length: ${records} }, (_, j) => ({ topic, key: 'k', value: 'v' + i + '-' + s + '-' + j, partition: 0 })) });
  await txn.commit();
}
console.log(JSON.stringify({ ms: performance.now() - t0 }));
await producer.close();
process.exit(0);
`,
};

/** The same program against the plain client (patched as installed), no wrapper. */
async function plainBundle(code: string, dir: string): Promise<string> {
  const outfile = path.join(dir, 'plain.mjs');
  await esbuild.build({
    stdin: { contents: code, loader: 'ts', sourcefile: 'program.ts', resolveDir: ROOT_DIR },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    outfile,
    alias: { '@platformatic/wasm-utils': path.join(ROOT_DIR, 'node_modules/@platformatic/wasm-utils/dist/bundled.js') },
    banner: { js: "import { createRequire as __kiqRequire } from 'node:module'; const require = __kiqRequire(import.meta.url);" },
    logLevel: 'silent',
  });
  return outfile;
}

/** Runs a bundle as the grader does (a child with an IPC channel, whose messages we drain). */
function runOnce(file: string, env: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = fork(file, [], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
    let messages = 0;
    child.on('message', () => messages++);
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.on('exit', (code) => {
      const line = out.trim().split('\n').find((l) => l.startsWith('{'));
      if (code !== 0 || !line) return reject(new Error(`${path.basename(file)} exited with ${code}: ${out.slice(-300)}`));
      resolve(JSON.parse(line).ms as number);
    });
  });
}

const pool = new ClusterPool();
try {
  const cluster = await pool.get('single');
  const admin = new Kafka({ clientId: 'bench-admin', brokers: cluster.brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  console.log(`${rounds} rounds per variant, ${transactions} transactions of ${sends} sends of ${records} records, broker ${cluster.brokers.join(',')}\n`);
  for (const client of Object.keys(PROGRAMS) as KafkaClient[]) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `kiq-wrapper-${client}-`));
    const wrapped = (await compileProgram(PROGRAMS[client], dir)).file;
    const plain = await plainBundle(PROGRAMS[client], dir);
    const times: Record<'wrapped' | 'plain', number[]> = { wrapped: [], plain: [] };
    for (let round = 0; round < rounds; round++) {
      // Alternate, so drift in the machine's load hits both variants alike.
      for (const variant of round % 2 ? (['plain', 'wrapped'] as const) : (['wrapped', 'plain'] as const)) {
        const topic = `kiq-bench-wrapper-${client}-${variant}-${round}-${Date.now().toString(36)}`;
        await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
        times[variant].push(await runOnce(variant === 'wrapped' ? wrapped : plain, { KAFKA_BROKERS: cluster.brokers.join(','), OUTPUT_TOPIC: topic, TRANSACTIONAL_ID: topic }));
        await admin.deleteTopics({ topics: [topic] });
      }
    }
    const rate = (ms: number) => (transactions * sends * records) / (ms / 1000);
    const [w, p] = [median(times.wrapped), median(times.plain)];
    console.log(
      `${client.padEnd(13)} plain ${rate(p).toFixed(0).padStart(6)} records/s (${((p / transactions / sends) * 1000).toFixed(0)} µs/send)   ` +
        `wrapped ${rate(w).toFixed(0).padStart(6)} records/s (${((w / transactions / sends) * 1000).toFixed(0)} µs/send)   overhead ${(((w - p) / p) * 100).toFixed(1)}%` +
        `   [wrapped ${times.wrapped.map((t) => t.toFixed(0)).join(', ')} ms; plain ${times.plain.map((t) => t.toFixed(0)).join(', ')} ms]`,
    );
    fs.rmSync(dir, { recursive: true, force: true });
  }
  await admin.disconnect();
} finally {
  await pool.close();
}
