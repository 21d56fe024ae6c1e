/**
 * npm run bench:broker — first-run jar fetch time (empty Maven caches) and broker cold start to
 * ready, then restart times (the grader's broker-restart fault). Prints figures; asserts nothing.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { processCpuSeconds } from './machine-cpu.ts';
import { BrokerProcess } from '../lab-server/broker/broker-process.ts';
import { ensureBrokerJars } from '../lab-server/broker/jars.ts';
import { BROKER_DIR } from '../lab-server/core/paths.ts';

const port = Number(process.env.BENCH_BROKER_PORT ?? 9492);
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

// 1. First-run fetch: a copy of broker/ with empty Maven caches, so Maven itself and every jar
// come from Maven Central as on a fresh machine.
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-bench-fetch-'));
for (const entry of ['pom.xml', 'mvnw', '.mvn', 'src']) fs.cpSync(path.join(BROKER_DIR, entry), path.join(scratch, entry), { recursive: true });
let started = Date.now();
const fetch = spawnSync(path.join(scratch, 'mvnw'), ['-B', '-q', 'package'], {
  cwd: scratch,
  env: { ...process.env, MAVEN_USER_HOME: path.join(scratch, 'm2home'), MAVEN_OPTS: `-Dmaven.repo.local=${path.join(scratch, 'repo')}` },
  encoding: 'utf8',
});
const fetchMs = Date.now() - started;
const jars = fs.existsSync(path.join(scratch, 'lib')) ? fs.readdirSync(path.join(scratch, 'lib')).length : 0;
console.log(fetch.status === 0 ? `first-run jar fetch (Maven + ${jars} jars from Maven Central): ${seconds(fetchMs)}` : `first-run jar fetch FAILED after ${seconds(fetchMs)}: ${fetch.stderr.slice(-400)}`);
fs.rmSync(scratch, { recursive: true, force: true });

// 2. Cold start to ready (format + JVM + KRaft + coordinators warm) on a fresh data dir, then the
// grader's broker restart both ways: inside the running JVM (what the grader does) and as a new
// JVM (what it falls back to), each with the JVM's CPU from the restart to 5 s after ready.
await ensureBrokerJars();
for (const [way, restartsPerJvm] of [['inside the running JVM', 40], ['as a new JVM', 0]] as const) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-bench-broker-'));
  const broker = new BrokerProcess({ basePort: port, dataDir, restartsPerJvm });
  started = Date.now();
  await broker.start();
  if (restartsPerJvm > 0) console.log(`broker cold start to ready (fresh data dir, port ${port}): ${seconds(Date.now() - started)}`);
  await sleep(5_000);
  const runs: string[] = [];
  for (let i = 0; i < 3; i++) {
    const before = broker.nodePid(1)!;
    const cpuBefore = processCpuSeconds(before);
    started = Date.now();
    await broker.restart();
    const ms = Date.now() - started;
    await sleep(5_000);
    const after = broker.nodePid(1)!;
    const cpu = after === before ? processCpuSeconds(after) - cpuBefore : processCpuSeconds(after);
    runs.push(`${seconds(ms)} (${cpu.toFixed(2)} core-s)`);
  }
  console.log(`broker restart ${way} (clean stop + start + coordinators ready; JVM CPU to 5 s after), 3 runs: ${runs.join(', ')}`);
  await broker.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
console.log(`machine: ${os.cpus().length} cores, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
