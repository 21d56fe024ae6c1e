/**
 * npm run bench:grader [-- --runs N --labs a,b --quick-runs N] — grades every lab's solution and
 * broken variants N times each (seeds 1..N) and prints verdict counts with median and worst grade
 * time. Prints figures; asserts nothing.
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { connectCluster } from '../lab-server/broker/cluster.ts';
import { listLabIds, loadLab } from '../lab-server/labs/load-lab.ts';
import { gradeProgram } from '../lab-server/runner/check-labs.ts';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '10' }, 'quick-runs': { type: 'string', default: '10' }, labs: { type: 'string' }, 'solutions-only': { type: 'boolean', default: false } },
});
const runs = Number(values.runs);
const quickRuns = Number(values['quick-runs']);
const labs = values.labs ? values.labs.split(',') : listLabIds();
const cluster = await connectCluster();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? 0;

console.log(`program                                       mode   runs  verdicts                         median   worst`);
for (const id of labs) {
  const lab = await loadLab(id);
  const programs = [
    { name: `${id}/solution`, file: lab.solutionFile, expect: 'pass' },
    ...(values['solutions-only'] ? [] : lab.broken.map((b) => ({ name: `${id}/broken/${b.name}`, file: b.file, expect: `fail:${b.expectFail}` }))),
  ];
  for (const program of programs) {
    for (const [mode, count] of [['full', runs], ['quick', program.expect === 'pass' ? quickRuns : 0]] as const) {
      if (!count) continue;
      const times: number[] = [];
      const verdicts = new Map<string, number>();
      for (let seed = 1; seed <= count; seed++) {
        const started = Date.now();
        const report = await gradeProgram(cluster, id, { kind: 'code', code: fs.readFileSync(program.file, 'utf8') }, { seed, quick: mode === 'quick' });
        times.push(Date.now() - started);
        const failed = report.checks.filter((c) => !c.passed).map((c) => c.name);
        const label = report.verdict === 'fail' ? `fail:${program.expect.startsWith('fail:') && (failed as string[]).includes(program.expect.slice(5)) ? program.expect.slice(5) : failed.join('+')}` : report.verdict;
        verdicts.set(label, (verdicts.get(label) ?? 0) + 1);
      }
      const summary = [...verdicts].map(([v, n]) => `${v} ${n}/${count}`).join(', ');
      console.log(
        `${program.name.padEnd(45)} ${mode.padEnd(6)} ${String(count).padStart(4)}  ${summary.padEnd(32)} ${(median(times) / 1000).toFixed(1).padStart(5)} s ${(Math.max(...times) / 1000).toFixed(1).padStart(6)} s`,
      );
    }
  }
}
await cluster.close();
