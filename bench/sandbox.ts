/**
 * npm run bench:sandbox [-- --runs N] — what the sandbox costs each program instance: the time
 * from spawning an instance to its first output line, with the sandbox (bubblewrap, cgroup,
 * relay) and without it (KAFKAIQ_SANDBOX=off in a child run of this script), and the difference.
 * The program is the smallest a learner could write, so the figure is the start overhead alone.
 * Prints figures; asserts nothing.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { compileProgram } from '../lab-server/runner/program/compile.ts';
import { ProgramInstance } from '../lab-server/runner/program/program-instance.ts';
import { sandboxPolicy } from '../lab-server/runner/program/sandbox/policy.ts';
import { median } from './median.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '15' }, child: { type: 'boolean', default: false } } });
const runs = Number(values.runs);

async function measure(): Promise<number[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-bench-'));
  try {
    // Imports kafkajs like every lab program, so the runtime's load is part of both figures.
    const compiled = await compileProgram("import { Kafka } from 'kafkajs';\nconsole.log('ready', typeof Kafka);\n", dir);
    const times: number[] = [];
    for (let i = 0; i < runs + 1; i++) {
      const started = performance.now();
      const instance = new ProgramInstance('i1', 1, { kind: 'bundle', file: compiled.file, readDirs: compiled.readDirs, writeDir: dir }, { KAFKA_BROKERS: '127.0.0.1:9092' });
      await new Promise<void>((resolve) => instance.once('line', () => resolve()));
      const ms = performance.now() - started;
      await instance.exited;
      if (i > 0) times.push(ms); // the first start warms the page cache
    }
    return times;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (values.child) {
  console.log(JSON.stringify(await measure()));
} else {
  const policy = sandboxPolicy();
  if (!policy.sandboxed) throw new Error(`no sandbox here: ${policy.reason}`);
  const sandboxed = await measure();
  const off = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', '--runs', String(runs)], {
    env: { ...process.env, KAFKAIQ_SANDBOX: 'off' },
    encoding: 'utf8',
  });
  if (off.status !== 0) throw new Error(off.stderr);
  const plain = JSON.parse(off.stdout.trim().split('\n').pop()!) as number[];
  console.log(`instance start to first line, ${runs} starts each (median):`);
  console.log(`  sandboxed (bubblewrap, cgroup ${policy.runtime.cgroups ?? 'none'}, relay): ${median(sandboxed).toFixed(0)} ms`);
  console.log(`  unsandboxed (KAFKAIQ_SANDBOX=off):                 ${median(plain).toFixed(0)} ms`);
  console.log(`  sandbox start overhead per instance:               ${(median(sandboxed) - median(plain)).toFixed(0)} ms`);
}
