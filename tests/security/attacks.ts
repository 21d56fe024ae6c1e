/**
 * The attack programs, one per rule of the sandbox (issue 14). Each is what a hostile learner
 * would paste into the editor. Kept as strings: several of them must not even compile, and tsc
 * must not try to resolve their imports. A program that runs reports each try on a line of its
 * own: "BLOCKED <what> <how>" or "ESCAPED <what> <how>"; "ATTACK DONE" ends it.
 */

/** The start of every runtime attack: report helpers. */
const REPORT = `
const blocked = (what: string, how: unknown) => console.log('BLOCKED', what, String(how).slice(0, 200));
const escaped = (what: string, how: unknown) => console.log('ESCAPED', what, String(how).slice(0, 200));
const code = (err: unknown) => (err as { code?: string }).code ?? String(err);
`;

export const COMPILE_ATTACKS = {
  /** Pass a lab by importing its solution from the repository. */
  importLabFile: { code: "// steal the answer\nimport './labs/single-stage/solution.ts';\n", line: 2 },
  /** Read a server file at compile time through an import attribute. */
  importAttribute: { code: "const x = 1;\nimport passwd from '/etc/passwd' with { type: 'text' };\nconsole.log(x, passwd);\n", line: 2 },
  /** Read every solution at compile time through a glob (a template-literal import). */
  globImport: { code: "const lab = 'single-stage';\nconst n = 'solution';\nconst m = await import(`../../labs/${lab}/${n}.ts`);\nconsole.log(m);\n", line: 3 },
  /** require() of a server path. */
  requirePath: { code: "const db = require('../.kafkaiq/attempts.sqlite');\nconsole.log(db);\n", line: 1 },
} as const;

/** Files of the server read at run time. */
export const readHostFiles = (stateDir: string) => `${REPORT}
import fs from 'node:fs';
for (const file of ['/etc/passwd', '${stateDir}/attempts.sqlite', '/proc/1/environ', '/work', '/tmp/..', '/root']) {
  try {
    const text = fs.statSync(file).isDirectory() ? fs.readdirSync(file).join(',') : fs.readFileSync(file, 'utf8');
    if (file === '/tmp/..' && !/kafkaiq|work|etc/.test(text)) blocked(file, 'only the sandbox root: ' + text);
    else escaped(file, text);
  } catch (err) {
    blocked(file, code(err));
  }
}
// Its own environment is all the program's (no server secrets): the names only.
console.log('ENV', Object.keys(process.env).sort().join(','));
console.log('ATTACK DONE');
`;

/** Signal the lab server: SIGUSR1 would open its inspector; any signal to any pid it can see. */
export const signalParent = `${REPORT}
const visible: number[] = [];
for (let pid = 1; pid < 70000; pid++) {
  try {
    process.kill(pid, 0);
    if (pid !== process.pid) visible.push(pid);
  } catch {}
}
console.log('VISIBLE', visible.join(','));
try {
  process.kill(process.ppid, 'SIGUSR1');
  console.log('PPID', process.ppid);
} catch (err) {
  blocked('ppid', code(err));
}
console.log('ATTACK DONE');
`;

/** End every process of the user: the server, the broker, other learners. */
export const killAll = `${REPORT}
try {
  process.kill(-1, 'SIGKILL');
  console.log('KILLED -1');
} catch (err) {
  blocked('kill -1', code(err));
}
await new Promise((r) => setTimeout(r, 500));
console.log('STILL HERE');
console.log('ATTACK DONE');
`;

/** Connect to addresses that are not this attempt's: the server, the controller, the control endpoint, anything. */
export const connectOutside = (targets: Array<[string, string, number]>) => `${REPORT}
import net from 'node:net';
const targets: Array<[string, string, number]> = ${JSON.stringify(targets)};
for (const [what, host, port] of targets) {
  await new Promise<void>((resolve) => {
    const socket = net.connect({ host, port });
    const timer = setTimeout(() => { socket.destroy(); blocked(what, 'timeout'); resolve(); }, 3000);
    socket.on('connect', () => {
      // The relay accepts only its own endpoints; anything that answers here is an escape.
      socket.write('GET / HTTP/1.0\\r\\n\\r\\n');
      socket.once('data', (d) => { clearTimeout(timer); escaped(what, d.toString().slice(0, 60)); socket.destroy(); resolve(); });
    });
    socket.on('error', (err) => { clearTimeout(timer); blocked(what, code(err)); resolve(); });
  });
}
// Its own broker still answers (the relay carries it).
const [bh, bp] = process.env.KAFKA_BROKERS!.split(',')[0]!.split(':');
await new Promise<void>((resolve) => {
  const s = net.connect({ host: bh!, port: Number(bp) });
  s.on('connect', () => { console.log('OWN BROKER REACHABLE'); s.destroy(); resolve(); });
  s.on('error', (err) => { console.log('OWN BROKER UNREACHABLE', code(err)); resolve(); });
});
console.log('ATTACK DONE');
`;

/** Start another process, and a worker thread. */
export const spawnProcess = `${REPORT}
import { spawnSync, execFileSync } from 'node:child_process';
import { Worker } from 'node:worker_threads';
try {
  const r = spawnSync('/bin/sh', ['-c', 'echo pwned']);
  if (r.error) blocked('spawn', code(r.error));
  else escaped('spawn', r.stdout);
} catch (err) {
  blocked('spawn', code(err));
}
try {
  execFileSync(process.execPath, ['-e', 'console.log(1)']);
  escaped('exec node', 'ran');
} catch (err) {
  blocked('exec node', code(err));
}
try {
  const w = new Worker('console.log("worker")', { eval: true });
  await new Promise((resolve, reject) => { w.on('exit', resolve); w.on('error', reject); });
  escaped('worker', 'ran');
} catch (err) {
  blocked('worker', code(err));
}
console.log('ATTACK DONE');
`;

/** 2 GB of Buffers: off the V8 heap, so --max-old-space-size does not see them. */
export const allocateBuffers = `
const chunks: Buffer[] = [];
for (let mb = 64; mb <= 2048; mb += 64) {
  const b = Buffer.alloc(64 * 1024 * 1024, 1);
  chunks.push(b);
  console.log('ALLOCATED', mb, 'MB');
}
console.log('ESCAPED allocated 2 GB');
console.log('ATTACK DONE');
`;

/** Fill the disk through the work dir, and write outside it. */
export const fillDisk = `${REPORT}
import fs from 'node:fs';
const chunk = Buffer.alloc(1024 * 1024, 120);
let written = 0;
try {
  const fd = fs.openSync('fill.bin', 'w');
  for (let i = 0; i < 4096; i++) { fs.writeSync(fd, chunk); written++; }
  escaped('fill', written + ' MB');
} catch (err) {
  blocked('fill', code(err) + ' after ' + written + ' MB');
}
for (const file of ['/program/program.mjs', '/etc/x', '/x', '/sandbox/node']) {
  try { fs.writeFileSync(file, 'x'); escaped(file, 'written'); } catch (err) { blocked(file, code(err)); }
}
console.log('ATTACK DONE');
`;

/** 200 MB on stdout without a newline: the server's line reader must not hold it. */
export const hugeLine = `
const chunk = 'x'.repeat(1024 * 1024);
for (let i = 0; i < 200; i++) {
  await new Promise<void>((resolve) => process.stdout.write(chunk, () => resolve()));
}
process.stdout.write('\\n');
console.log('ATTACK DONE');
`;

/** A forged, gigantic message on the grader's channel (fd 3). */
export const floodChannel = `
import fs from 'node:fs';
const fd = Number(process.env.KAFKAIQ_CHANNEL_FD ?? 3);
const chunk = 'y'.repeat(1024 * 1024);
try {
  for (let i = 0; i < 100; i++) fs.writeSync(fd, chunk);
  console.log('WROTE 100 MB TO THE CHANNEL');
} catch (err) {
  console.log('CHANNEL WRITE FAILED', (err as { code?: string }).code);
}
console.log('ATTACK DONE');
`;
