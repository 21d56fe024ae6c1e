/**
 * npm run bench:class-view [-- --learners N --attempts M --runs R] — how fast the class view
 * answers for a large class: N learners (1,000) with M graded attempts each (6, with reports and
 * code as the store keeps them), in a fresh attempt store, served by the real lab server. Times
 * the roster's first page in each sort, a filtered page, a learner's page, the labs page and both
 * CSV exports over HTTP, median of R runs. Prints figures; asserts nothing.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { openAttemptStore } from '../lab-server/server/attempt-store.ts';
import { createLabServer } from '../lab-server/server/lab-server.ts';
import { fakeReport, fakeSessionFactory } from '../tests/support/fake-lab-session.ts';
import { median } from './median.ts';

const { values } = parseArgs({ options: { learners: { type: 'string', default: '1000' }, attempts: { type: 'string', default: '6' }, runs: { type: 'string', default: '9' } } });
const [learners, attempts, runs] = [Number(values.learners), Number(values.attempts), Number(values.runs)];
const LABS = ['single-stage', 'copy', 'fan-out', 'db-sink', 'outbox', 'zombie'];
const TOKEN = 'bench-class-view-token-0123456789';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-bench-class-'));
const store = openAttemptStore({ file: path.join(dir, 'attempts.sqlite') });
const program = `import { Kafka } from 'kafkajs';\n${'// a learner program of a typical size\n'.repeat(150)}`;
const filled = performance.now();
for (let l = 0; l < learners; l++) {
  const session = `bench-learner-${String(l).padStart(6, '0')}`;
  for (let a = 0; a < attempts; a++) {
    const lab = LABS[(l + a) % LABS.length]!;
    const failed = (l + a) % 3 === 0;
    await store.save(session, fakeReport(lab, failed ? { verdict: 'fail', checks: [{ name: 'no-duplicates', passed: false, summary: '2 duplicates', evidence: ['out-0@3 twice'] }] } : {}), program);
  }
  if (l % 2 === 0) (await store.setDisplayName(session, `Learner ${l}`));
}
console.log(`${learners} learners × ${attempts} attempts stored in ${((performance.now() - filled) / 1000).toFixed(1)} s`);

fs.mkdirSync(path.join(dir, 'site'));
const server = await createLabServer({
  port: 0,
  staticDir: path.join(dir, 'site'),
  createSession: fakeSessionFactory().createSession,
  store,
  cluster: { brokers: 'localhost:9092', brokerFaults: false },
  instructorToken: TOKEN,
  log: () => {},
});
const firstPage = await (await fetch(`${server.url}/instructor`, { headers: { Authorization: `Bearer ${TOKEN}` } })).text();
const learnerLink = /href="(\/instructor\/learner\/[0-9a-f]{12})"/.exec(firstPage)![1]!;
const pages: Array<[string, string]> = [
  ['roster, page 1 by name', '/instructor'],
  ['roster, page 10 by latest activity', '/instructor?sort=last&page=10'],
  ['roster, by most attempts', '/instructor?sort=attempts'],
  ['roster, name filter + lab filter', '/instructor?name=learner%201&lab=copy'],
  ["a learner's page (6 attempts with code)", learnerLink],
  ['labs page', '/instructor/labs'],
  ['roster.csv (every learner)', '/instructor/roster.csv'],
  ['labs.csv', '/instructor/labs.csv'],
];
console.log(`\nmedian of ${runs} requests, ms (whole HTTP answer, read to the end):`);
for (const [name, url] of pages) {
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const response = await fetch(`${server.url}${url}`, { headers: { Authorization: `Bearer ${TOKEN}` } });
    bytes = (await response.arrayBuffer()).byteLength;
    times.push(performance.now() - started);
  }
  console.log(`  ${name.padEnd(42)} ${median(times).toFixed(1).padStart(8)} ms  (${(bytes / 1024).toFixed(0)} KB)`);
}
await server.close();
await store.close();
fs.rmSync(dir, { recursive: true, force: true });
