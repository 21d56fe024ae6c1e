/**
 * The Node builtins a learner's program may load: ONE list, enforced twice.
 *  - At compile time (compile.ts): an import of anything else is refused with its line.
 *  - At run time (the module gate below, `node --import` before the program, sandboxed or not): a
 *    computed `import()`, `require` through createRequire, `module._load` or
 *    `process.getBuiltinModule` of anything else throws ERR_KAFKAIQ_MODULE_REFUSED, because the
 *    compile step only sees specifiers written as literals.
 *
 * What the gate covers: every resolution through Node's module loader (ESM and CJS, through a
 * `module.registerHooks` resolve hook that checks the RESOLVED url, so `fs`, `node:fs` and a data:
 * module importing `node:sqlite` are judged alike), `process.getBuiltinModule`, and
 * `module.register`/`module.registerHooks` themselves (refused after the gate's own hook is in, so
 * a program cannot put a short-circuiting hook in front of it).
 * What it leaves to the rest: `process.binding`, `process._linkedBinding`, `process.dlopen` (native
 * addons), `process.execve`, child processes and workers are refused by Node's permission model
 * (program-instance.ts passes --permission without --allow-addons, --allow-child-process or
 * --allow-worker); files and the network by the permission model and, where it runs, the
 * bubblewrap sandbox (sandbox/), which also holds when a program finds a way past both.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { STATE_DIR } from '../../core/paths.ts';

/**
 * Allowed: what the lab runtimes (kafkajs, pg, @platformatic/kafka bundles) and ordinary programs
 * use. Left out on purpose: node:sqlite (a database handle that bypasses the permission model's
 * file checks), node:ffi, v8 (setFlagsFromString, heap snapshots), vm, inspector, repl,
 * trace_events (writes its own files), wasi, cluster, node:sea, node:test and the legacy `_`
 * internals. child_process and worker_threads load (a program may try them) but the permission
 * model refuses to start anything.
 */
export const PROGRAM_BUILTINS: readonly string[] = [
  'assert',
  'assert/strict',
  'async_hooks',
  'buffer',
  'child_process',
  'console',
  'constants',
  'crypto',
  'dgram',
  'diagnostics_channel',
  'dns',
  'dns/promises',
  'events',
  'fs',
  'fs/promises',
  'http',
  'http2',
  'https',
  'module',
  'net',
  'os',
  'path',
  'path/posix',
  'path/win32',
  'perf_hooks',
  'process',
  'punycode',
  'querystring',
  'readline',
  'readline/promises',
  'stream',
  'stream/consumers',
  'stream/promises',
  'stream/web',
  'string_decoder',
  'sys',
  'timers',
  'timers/promises',
  'tls',
  'tty',
  'url',
  'util',
  'util/types',
  'worker_threads',
  'zlib',
];

const ALLOWED = new Set(PROGRAM_BUILTINS);

/** Whether a specifier names an allowed builtin (`fs` or `node:fs`). */
export function isProgramBuiltin(specifier: string): boolean {
  return ALLOWED.has(specifier.startsWith('node:') ? specifier.slice('node:'.length) : specifier);
}

/** The gate's file name beside the program, inside the sandbox. */
export const MODULE_GATE_NAME = 'module-gate.mjs';

/** The gate's source, with the allow-list written into it (it runs before anything can change it). */
export function moduleGateSource(allowed: readonly string[] = PROGRAM_BUILTINS): string {
  return `// KafkaIQ's run-time module gate (lab-server/runner/program/builtins.ts). Generated; do not edit.
import module from 'node:module';
const ALLOWED = new Set(${JSON.stringify(allowed)});
const allowed = (id) => typeof id === 'string' && ALLOWED.has(id.startsWith('node:') ? id.slice(5) : id);
const refuse = (what) => {
  const err = new Error(\`\${what} is refused in a lab program: it may load only kafkajs, pg, @platformatic/kafka and these builtins: \${[...ALLOWED].join(', ')}\`);
  err.code = 'ERR_KAFKAIQ_MODULE_REFUSED';
  throw err;
};
const registerHooks = module.registerHooks;
registerHooks({
  resolve(specifier, context, nextResolve) {
    const result = nextResolve(specifier, context);
    if (result.url.startsWith('node:') && !allowed(result.url)) refuse(\`'\${specifier}'\`);
    return result;
  },
});
const getBuiltinModule = process.getBuiltinModule;
Object.defineProperty(process, 'getBuiltinModule', {
  value: function getBuiltinModuleGated(id) {
    if (!allowed(id)) refuse(\`process.getBuiltinModule('\${String(id)}')\`);
    return getBuiltinModule.call(process, id);
  },
  writable: false,
  configurable: false,
  enumerable: true,
});
for (const name of ['register', 'registerHooks']) {
  Object.defineProperty(module, name, { value: () => refuse(\`module.\${name}()\`), writable: false, configurable: false, enumerable: true });
}
module.syncBuiltinESMExports();
`;
}

let written: string | null = null;

/**
 * The gate as a file of the server's runtime folder, named by its content: programs may read that
 * folder but never write it, so a program cannot change the gate its next incarnation starts with.
 */
export function moduleGateFile(): string {
  if (written && fs.existsSync(written)) return written;
  const source = moduleGateSource();
  const dir = path.join(STATE_DIR, 'runtime');
  const file = path.join(dir, `module-gate-${createHash('sha256').update(source).digest('hex').slice(0, 12)}.mjs`);
  if (!fs.existsSync(file)) {
    fs.mkdirSync(dir, { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, source, { mode: 0o644 });
    fs.renameSync(tmp, file);
  }
  written = file;
  return file;
}
