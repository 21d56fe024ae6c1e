/**
 * npm run bench:tenancy [-- --grants N --concurrent N]
 * The cost of tenancy on the teaching broker: how long an attempt's user and ACLs take to grant
 * (CreateAcls, then a probe until every broker enforces them) and to revoke, over N attempts; then
 * N quick grades of the single-stage solution at once, each as its own attempt user, and whether
 * they all pass. Prints figures; asserts nothing.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { connectCluster } from '../lab-server/broker/cluster.ts';
import { LABS_DIR } from '../lab-server/core/paths.ts';
import { grantAttempt } from '../lab-server/kafka/attempt-acls.ts';
import { createKafka } from '../lab-server/kafka/client.ts';
import { loadLab } from '../lab-server/labs/load-lab.ts';
import { createAttempt } from '../lab-server/runner/attempt.ts';
import { median } from './median.ts';

const { values } = parseArgs({ options: { grants: { type: 'string', default: '20' }, concurrent: { type: 'string', default: '12' } } });
const cluster = await connectCluster();
const kafka = createKafka(cluster.brokers, 'kafkaiq-bench-tenancy');
const admin = kafka.admin();
await admin.connect();

const grantMs: number[] = [];
const revokeMs: number[] = [];
for (let i = 0; i < Number(values.grants); i++) {
  const ns = `kiq-bench-${process.pid}-${i}`;
  await admin.createTopics({ waitForLeaders: true, topics: [{ topic: `${ns}-input` }, { topic: `${ns}-output` }] });
  const identity = await grantAttempt(kafka, cluster.brokers, {
    namespace: ns,
    topics: [`${ns}-input`, `${ns}-output`],
    writeTopics: [`${ns}-output`],
    groups: [`${ns}-group`],
    transactionalIds: [`${ns}-tx-1`],
    expiresAtMs: Date.now() + 600_000,
  });
  grantMs.push(identity.setupMs);
  const started = performance.now();
  await identity.revoke();
  revokeMs.push(performance.now() - started);
  await admin.deleteTopics({ topics: [`${ns}-input`, `${ns}-output`] });
}
await admin.disconnect();
console.log(`attempt user + ACLs: grant median ${median(grantMs)} ms (max ${Math.max(...grantMs)} ms), revoke median ${Math.round(median(revokeMs))} ms, over ${grantMs.length} attempts`);

const n = Number(values.concurrent);
const lab = await loadLab('single-stage');
const code = fs.readFileSync(path.join(LABS_DIR, 'single-stage', 'solution.ts'), 'utf8');
const quiet = { output: () => {}, diagnostics: () => {}, progress: () => {}, state: () => {}, fault: () => {} };
const started = performance.now();
const reports = await Promise.all(
  Array.from({ length: n }, (_, i) =>
    createAttempt({ lab, program: { kind: 'code', code }, brokers: cluster.brokers, control: null, namespace: `kiq-bench-c${process.pid}-${i}`, mode: 'quick', listener: quiet }).grade(),
  ),
);
const verdicts = reports.map((r) => r.verdict);
console.log(`${n} concurrent quick grades of single-stage/solution: ${verdicts.filter((v) => v === 'pass').length} pass (${verdicts.join(', ')}) in ${((performance.now() - started) / 1000).toFixed(1)} s; median grade ${(median(reports.map((r) => r.stats.durationMs)) / 1000).toFixed(1)} s`);
for (const r of reports.filter((x) => x.verdict !== 'pass')) console.log(`  ${r.verdict}: ${r.message}`);
await cluster.close();
process.exit(0);
