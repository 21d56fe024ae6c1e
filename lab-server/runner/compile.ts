import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as esbuild from 'esbuild';
import type { Diagnostic } from '../../src/shared/messages.ts';
import { KafkaIqError } from '../core/errors.ts';
import { ROOT_DIR, STATE_DIR } from '../core/paths.ts';

const SHIM = path.join(ROOT_DIR, 'lab-server/runner/child/kafkajs-shim.ts');
const RUNTIME_DIR = path.join(STATE_DIR, 'runtime');
const REQUIRE_BANNER =
  "import { createRequire as __kiqRequire } from 'node:module'; const require = __kiqRequire(import.meta.url);";

let runtimeBuild: Promise<string> | null = null;

/**
 * kafkajs plus our wrapper, bundled once into one ESM file that every learner program imports.
 * Compiling a learner program then only bundles the learner's own code (a few ms), which keeps
 * "click Run -> first output line" short.
 */
export function kafkajsRuntime(): Promise<string> {
  runtimeBuild ??= (async () => {
    // Every module of the wrapper (child/*.ts), so a change to any of them rebuilds the runtime.
    const childDir = path.dirname(SHIM);
    const childSources = fs.readdirSync(childDir).filter((f) => f.endsWith('.ts')).sort().map((f) => path.join(childDir, f));
    // kafkajs's version, and the patch patch-package applies to it on install (patches/).
    const patchDir = path.join(ROOT_DIR, 'patches');
    const patches = fs.existsSync(patchDir) ? fs.readdirSync(patchDir).filter((f) => f.startsWith('kafkajs+')).sort().map((f) => path.join(patchDir, f)) : [];
    const sources = [...childSources, path.join(ROOT_DIR, 'node_modules/kafkajs/package.json'), ...patches];
    const digest = createHash('sha256');
    for (const file of sources) digest.update(fs.readFileSync(file));
    const outfile = path.join(RUNTIME_DIR, `kafkajs-runtime-${digest.digest('hex').slice(0, 12)}.mjs`);
    if (!fs.existsSync(outfile)) {
      fs.mkdirSync(RUNTIME_DIR, { recursive: true });
      const tmp = `${outfile}.${process.pid}.tmp`;
      await esbuild.build({
        entryPoints: [SHIM],
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        outfile: tmp,
        alias: { 'kafkajs-real': path.join(ROOT_DIR, 'node_modules/kafkajs/index.js') },
        banner: { js: REQUIRE_BANNER },
        logLevel: 'silent',
      });
      fs.renameSync(tmp, outfile);
    }
    return outfile;
  })();
  return runtimeBuild;
}

const PG_SHIM = path.join(ROOT_DIR, 'lab-server/runner/child/pg-shim.ts');
let pgRuntimeBuild: Promise<string> | null = null;

/**
 * pg (node-postgres) plus our wrapper (SQL crash points), bundled once like the kafkajs runtime.
 * Built only when a program imports 'pg'. pg's optional native binding and Cloudflare socket are
 * left out: a program that asks for pg.native gets pg's own "not installed" answer.
 */
export function pgRuntime(): Promise<string> {
  pgRuntimeBuild ??= (async () => {
    const sources = [PG_SHIM, path.join(ROOT_DIR, 'lab-server/runner/child/protocol.ts'), path.join(ROOT_DIR, 'node_modules/pg/package.json')];
    const digest = createHash('sha256');
    for (const file of sources) digest.update(fs.readFileSync(file));
    const outfile = path.join(RUNTIME_DIR, `pg-runtime-${digest.digest('hex').slice(0, 12)}.mjs`);
    if (!fs.existsSync(outfile)) {
      fs.mkdirSync(RUNTIME_DIR, { recursive: true });
      const tmp = `${outfile}.${process.pid}.tmp`;
      await esbuild.build({
        entryPoints: [PG_SHIM],
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        outfile: tmp,
        alias: { 'pg-real': path.join(ROOT_DIR, 'node_modules/pg/lib/index.js') },
        external: ['pg-native', 'pg-cloudflare', 'cloudflare:sockets'],
        banner: { js: REQUIRE_BANNER },
        logLevel: 'silent',
      });
      fs.renameSync(tmp, outfile);
    }
    return outfile;
  })();
  pgRuntimeBuild.catch(() => (pgRuntimeBuild = null));
  return pgRuntimeBuild;
}

const PLATFORMATIC_SHIM = path.join(ROOT_DIR, 'lab-server/runner/child/platformatic-shim.ts');
let platformaticRuntimeBuild: Promise<string> | null = null;

/**
 * @platformatic/kafka plus our wrapper (the same crash points as kafkajs's), bundled once like the
 * kafkajs runtime; built only when a program imports '@platformatic/kafka'. Its WebAssembly helpers
 * come from their self-contained build (no .wasm file to read at run time); its optional native
 * CRC32C is looked up at run time, not bundled, and the pure fallback is used when it is out of reach.
 */
export function platformaticRuntime(): Promise<string> {
  platformaticRuntimeBuild ??= (async () => {
    const childDir = path.dirname(PLATFORMATIC_SHIM);
    const childSources = fs.readdirSync(childDir).filter((f) => f.endsWith('.ts')).sort().map((f) => path.join(childDir, f));
    const patchDir = path.join(ROOT_DIR, 'patches');
    const patches = fs.existsSync(patchDir) ? fs.readdirSync(patchDir).filter((f) => f.startsWith('@platformatic+kafka+')).sort().map((f) => path.join(patchDir, f)) : [];
    const sources = [...childSources, path.join(ROOT_DIR, 'node_modules/@platformatic/kafka/package.json'), ...patches];
    const digest = createHash('sha256');
    for (const file of sources) digest.update(fs.readFileSync(file));
    const outfile = path.join(RUNTIME_DIR, `platformatic-runtime-${digest.digest('hex').slice(0, 12)}.mjs`);
    if (!fs.existsSync(outfile)) {
      fs.mkdirSync(RUNTIME_DIR, { recursive: true });
      const tmp = `${outfile}.${process.pid}.tmp`;
      await esbuild.build({
        entryPoints: [PLATFORMATIC_SHIM],
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node22',
        outfile: tmp,
        alias: {
          'platformatic-real': path.join(ROOT_DIR, 'node_modules/@platformatic/kafka/dist/index.js'),
          '@platformatic/wasm-utils': path.join(ROOT_DIR, 'node_modules/@platformatic/wasm-utils/dist/bundled.js'),
        },
        banner: { js: REQUIRE_BANNER },
        logLevel: 'silent',
      });
      fs.renameSync(tmp, outfile);
    }
    return outfile;
  })();
  platformaticRuntimeBuild.catch(() => (platformaticRuntimeBuild = null));
  return platformaticRuntimeBuild;
}

export interface CompiledProgram {
  file: string;
  /** Folders the program may read (its own folder and the kafkajs runtime). */
  readDirs: string[];
  warnings: Diagnostic[];
}

const toDiagnostic = (m: esbuild.Message, severity: Diagnostic['severity']): Diagnostic => ({
  line: m.location?.line ?? 1,
  column: (m.location?.column ?? 0) + 1,
  message: m.text,
  severity,
});

/**
 * Turns the learner's TypeScript into one runnable ESM file in `dir`. Syntax errors stop here
 * with the first error's line in the message; type errors are the editor's business and never
 * block a run.
 */
export async function compileProgram(code: string, dir: string): Promise<CompiledProgram> {
  const runtime = await kafkajsRuntime();
  const outfile = path.join(dir, 'program.mjs');
  try {
    const result = await esbuild.build({
      stdin: { contents: code, loader: 'ts', sourcefile: 'program.ts', resolveDir: ROOT_DIR },
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outfile,
      sourcemap: 'inline',
      sourcesContent: false,
      banner: { js: REQUIRE_BANNER },
      logLevel: 'silent',
      plugins: [
        {
          name: 'kafkajs-runtime',
          setup(build) {
            build.onResolve({ filter: /^kafkajs$/ }, () => ({ path: runtime, external: true }));
            // 'pg' resolves to the project's pg with the SQL crash points (same folder as the kafkajs runtime).
            build.onResolve({ filter: /^pg$/ }, async () => ({ path: await pgRuntime(), external: true }));
            // '@platformatic/kafka' resolves to that client with the same crash points (platformatic-shim.ts).
            build.onResolve({ filter: /^@platformatic\/kafka$/ }, async () => ({ path: await platformaticRuntime(), external: true }));
          },
        },
      ],
    });
    return { file: outfile, readDirs: [dir, path.dirname(runtime)], warnings: result.warnings.map((w) => toDiagnostic(w, 'warning')) };
  } catch (err) {
    const errors = (err as esbuild.BuildFailure).errors ?? [];
    const first = errors[0];
    const where = first?.location ? `program.ts:${first.location.line}:${first.location.column + 1}` : 'program.ts';
    const failure = new KafkaIqError('COMPILE_FAILED', `${where}: ${first?.text ?? 'the program could not be compiled'}`);
    (failure as KafkaIqError & { diagnostics?: Diagnostic[] }).diagnostics = errors.map((e) => toDiagnostic(e, 'error'));
    throw failure;
  }
}
