/**
 * npm run bench:concurrent [-- --learners 12 --quick] — N learners grade the single-stage
 * solution at the same time through the workbench's WebSocket, against the real server (`npm
 * start`'s entry point, no site build) and broker, each in its own sandbox and from an address of
 * its own (the server's admission limits apply: 2 grades at once per core). Prints every verdict
 * and the median and worst time from "grade" sent to report received. Asserts nothing.
 */
import { parseArgs } from 'node:util';
import { connectCluster } from '../lab-server/broker/cluster.ts';
import { startCourseServer } from '../tests/support/course-server.ts';
import { Learner, SOLUTION } from '../tests/security/support.ts';
import { median } from './median.ts';

const { values } = parseArgs({ options: { learners: { type: 'string', default: '12' }, quick: { type: 'boolean', default: false } } });
const learners = Number(values.learners);

const cluster = await connectCluster();
// Each learner from an address of its own (X-Forwarded-For through a trusted proxy, as behind
// nginx): the server allows one address 2 grades at once, as it would one learner.
const server = await startCourseServer(cluster.brokers, 'start', { args: ['--no-build'], env: { KAFKAIQ_TRUST_PROXY: '1', KAFKAIQ_MULTI_USER: '1' } });
try {
  const sandbox = server.log.find((l) => l.startsWith('Sandbox:') || l.includes('UNSANDBOXED'));
  console.log(sandbox ?? 'sandbox: (not reported)');
  const results = await Promise.all(
    Array.from({ length: learners }, async (_, n) => {
      const learner = await Learner.connect(server.url, { 'X-Forwarded-For': `10.0.${(n >> 8) & 255}.${n & 255}` });
      const started = Date.now();
      try {
        const report = await learner.grade(SOLUTION, values.quick, 600_000);
        return { verdict: report.verdict, ms: Date.now() - started, message: report.message };
      } finally {
        learner.close();
      }
    }),
  );
  const times = results.map((r) => r.ms);
  const passed = results.filter((r) => r.verdict === 'pass').length;
  for (const r of results) console.log(`  ${r.verdict.padEnd(5)} ${(r.ms / 1000).toFixed(1)} s${r.verdict === 'pass' ? '' : `  ${r.message}`}`);
  console.log(
    `${learners} concurrent single-stage ${values.quick ? 'quick' : 'full'} grades through the WebSocket: ${passed}/${learners} pass, median ${(median(times) / 1000).toFixed(1)} s, worst ${(Math.max(...times) / 1000).toFixed(1)} s`,
  );
} finally {
  await server.stop();
  await cluster.close();
}
