import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { isBuiltin } from 'node:module';
import path from 'node:path';
import * as esbuild from 'esbuild';
import type { Diagnostic } from '../../../src/shared/messages.ts';
import { describeError, KafkaIqError } from '../../../src/shared/errors.ts';
import { ROOT_DIR, STATE_DIR } from '../../core/paths.ts';
import { isProgramBuiltin } from './builtins.ts';

const CHILD_DIR = path.join(ROOT_DIR, 'lab-server/runner/program/child');
const RUNTIME_DIR = path.join(STATE_DIR, 'runtime');
const REQUIRE_BANNER =
  "import { createRequire as __kiqRequire } from 'node:module'; const require = __kiqRequire(import.meta.url);";
const nodeModule = (file: string) => path.join(ROOT_DIR, 'node_modules', file);

/**
 * The sources of a runtime that bundles the whole wrapper: every module of it (child/*.ts), the
 * package's version, and the patches patch-package applies to it on install (patches/, the files
 * starting with `patchPrefix`). A change to any of them builds a new bundle.
 */
function wrapperAndPackage(pkg: string, patchPrefix: string): () => string[] {
  return () => {
    const wrapper = fs.readdirSync(CHILD_DIR).filter((f) => f.endsWith('.ts')).sort().map((f) => path.join(CHILD_DIR, f));
    const patchDir = path.join(ROOT_DIR, 'patches');
    const patches = fs.existsSync(patchDir) ? fs.readdirSync(patchDir).filter((f) => f.startsWith(patchPrefix)).sort().map((f) => path.join(patchDir, f)) : [];
    return [...wrapper, nodeModule(`${pkg}/package.json`), ...patches];
  };
}

interface RuntimeBundle {
  /** The bundle is `<name>-runtime-<digest>.mjs` (output-sink.ts recognises kafkajs's in stack traces). */
  name: string;
  /** Our wrapper: the bundle's entry point. */
  shim: string;
  /** The files whose content names the bundle: a change to any of them builds a new one. */
  sources: () => string[];
  target: string;
  alias: Record<string, string>;
  external?: string[];
}

const runtimeBuilds = new Map<string, Promise<string>>();

/**
 * Bundles a package and our wrapper into one ESM file, once per content of its sources; a failed
 * build is forgotten, so the next compile tries again.
 */
function bundledRuntime(bundle: RuntimeBundle): Promise<string> {
  let build = runtimeBuilds.get(bundle.name);
  if (build) return build;
  build = (async () => {
    const digest = createHash('sha256');
    for (const file of bundle.sources()) digest.update(fs.readFileSync(file));
    const outfile = path.join(RUNTIME_DIR, `${bundle.name}-runtime-${digest.digest('hex').slice(0, 12)}.mjs`);
    if (!fs.existsSync(outfile)) {
      fs.mkdirSync(RUNTIME_DIR, { recursive: true });
      const tmp = `${outfile}.${process.pid}.tmp`;
      await esbuild.build({
        entryPoints: [bundle.shim],
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: bundle.target,
        outfile: tmp,
        alias: bundle.alias,
        ...(bundle.external ? { external: bundle.external } : {}),
        banner: { js: REQUIRE_BANNER },
        logLevel: 'silent',
      });
      fs.renameSync(tmp, outfile);
    }
    return outfile;
  })();
  runtimeBuilds.set(bundle.name, build);
  build.catch(() => runtimeBuilds.delete(bundle.name)); // the compile that awaits it reports the failure
  return build;
}

/**
 * kafkajs plus our wrapper, bundled once into one ESM file that every learner program imports.
 * Compiling a learner program then only bundles the learner's own code (a few ms), which keeps
 * "click Run -> first output line" short.
 */
export const kafkajsRuntime = (): Promise<string> =>
  bundledRuntime({
    name: 'kafkajs',
    shim: path.join(CHILD_DIR, 'kafkajs-shim.ts'),
    sources: wrapperAndPackage('kafkajs', 'kafkajs+'),
    target: 'node20',
    alias: { 'kafkajs-real': nodeModule('kafkajs/index.js') },
  });

/**
 * pg (node-postgres) plus our wrapper (SQL crash points), bundled once like the kafkajs runtime.
 * Built only when a program imports 'pg'. pg's optional native binding and Cloudflare socket are
 * left out: a program that asks for pg.native gets pg's own "not installed" answer.
 */
export const pgRuntime = (): Promise<string> =>
  bundledRuntime({
    name: 'pg',
    shim: path.join(CHILD_DIR, 'pg-shim.ts'),
    sources: () => ['pg-shim.ts', 'protocol.ts', 'channel.ts'].map((f) => path.join(CHILD_DIR, f)).concat(nodeModule('pg/package.json')),
    target: 'node20',
    alias: { 'pg-real': nodeModule('pg/lib/index.js') },
    external: ['pg-native', 'pg-cloudflare', 'cloudflare:sockets'],
  });

/**
 * @platformatic/kafka plus our wrapper (the same crash points as kafkajs's), bundled once like the
 * kafkajs runtime; built only when a program imports '@platformatic/kafka'. Its WebAssembly helpers
 * come from their self-contained build (no .wasm file to read at run time); its optional native
 * CRC32C is looked up at run time, not bundled, and the pure fallback is used when it is out of reach.
 */
export const platformaticRuntime = (): Promise<string> =>
  bundledRuntime({
    name: 'platformatic',
    shim: path.join(CHILD_DIR, 'platformatic-shim.ts'),
    sources: wrapperAndPackage('@platformatic/kafka', '@platformatic+kafka+'),
    target: 'node22',
    alias: {
      'platformatic-real': nodeModule('@platformatic/kafka/dist/index.js'),
      '@platformatic/wasm-utils': nodeModule('@platformatic/wasm-utils/dist/bundled.js'),
    },
  });

/** Bare package names a learner program may import; everything else must be a `node:` builtin. */
export const ALLOWED_PACKAGES = ['kafkajs', 'pg', '@platformatic/kafka'] as const;
type AllowedPackage = (typeof ALLOWED_PACKAGES)[number];

/** The file name each runtime has next to program.mjs (a symlink here, a read-only bind in the sandbox). */
const RUNTIME_FILE: Record<AllowedPackage, string> = {
  kafkajs: 'kafkajs-runtime.mjs',
  pg: 'pg-runtime.mjs',
  '@platformatic/kafka': 'platformatic-kafka-runtime.mjs',
};

const RUNTIME_OF: Record<AllowedPackage, () => Promise<string>> = {
  kafkajs: kafkajsRuntime,
  pg: pgRuntime,
  '@platformatic/kafka': platformaticRuntime,
};

export interface CompiledProgram {
  file: string;
  /** Folders the program may read (its own folder and the runtimes') when it runs without the sandbox. */
  readDirs: string[];
  warnings: Diagnostic[];
}

/** Limits of one compile: learner code is hostile until proven otherwise. */
export const COMPILE_LIMITS = { maxSourceBytes: 256 * 1024, maxOutputBytes: 4 * 1024 * 1024, timeoutMs: 10_000 };

const toDiagnostic = (m: esbuild.Message, severity: Diagnostic['severity']): Diagnostic => ({
  line: m.location?.line ?? 1,
  column: (m.location?.column ?? 0) + 1,
  message: m.text,
  severity,
});

/** Why an import is refused, or null when it is allowed. */
function refusal(specifier: string, kind: esbuild.ImportKind, attributes: Record<string, string>): string | null {
  if (Object.keys(attributes).length) return `import attributes (with { ${Object.keys(attributes).join(', ')} }) are not allowed: import '${specifier}' without them`;
  if (kind !== 'import-statement' && kind !== 'dynamic-import' && kind !== 'require-call') return `'${specifier}' cannot be loaded this way (${kind})`;
  if ((ALLOWED_PACKAGES as readonly string[]).includes(specifier)) return null;
  // The same list the run-time module gate enforces (builtins.ts): a computed import() meets it there.
  if (isProgramBuiltin(specifier)) return null;
  if (isBuiltin(specifier)) return `'${specifier}' is not available to lab programs: import only ${ALLOWED_PACKAGES.join(', ')} and the node: builtins listed in lab-server/runner/program/builtins.ts`;
  if (/^(\.|\/|[A-Za-z]:|file:)/.test(specifier) || specifier.includes('*')) {
    return `'${specifier}' is refused: your program is this one file; it may import only ${ALLOWED_PACKAGES.join(', ')} and node: builtins`;
  }
  return `'${specifier}' is not available here: import only ${ALLOWED_PACKAGES.join(', ')} and node: builtins`;
}

/** An empty folder: esbuild resolves the learner's imports from here, so nothing of the server can match. */
const EMPTY_DIR = path.join(RUNTIME_DIR, 'empty');

/**
 * Turns the learner's TypeScript into one runnable ESM file in `dir`, reading nothing but the
 * learner's code: every import goes through the allow-list (refusals name the line), no file is
 * ever loaded from disk, and the build has a time limit and an output cap. Syntax errors stop here
 * with the first error's line in the message; type errors are the editor's business and never
 * block a run.
 */
export async function compileProgram(code: string, dir: string): Promise<CompiledProgram> {
  if (Buffer.byteLength(code) > COMPILE_LIMITS.maxSourceBytes) {
    throw compileFailure([{ text: `the program is larger than ${COMPILE_LIMITS.maxSourceBytes / 1024} KB`, location: null } as unknown as esbuild.Message]);
  }
  fs.mkdirSync(EMPTY_DIR, { recursive: true });
  const outfile = path.join(dir, 'program.mjs');
  const used = new Map<AllowedPackage, string>();
  let context: esbuild.BuildContext | null = null;
  let timer: NodeJS.Timeout | undefined;
  try {
    context = await esbuild.context({
      stdin: { contents: code, loader: 'ts', sourcefile: 'program.ts', resolveDir: EMPTY_DIR },
      bundle: true,
      write: false,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      // Built as if in the empty folder, so names in the source map and comments are just 'program.ts'.
      absWorkingDir: EMPTY_DIR,
      outfile: path.join(EMPTY_DIR, 'program.mjs'),
      sourcemap: 'inline',
      sourcesContent: false,
      banner: { js: REQUIRE_BANNER },
      logLevel: 'silent',
      plugins: [
        {
          name: 'learner-isolation',
          setup(build) {
            build.onResolve({ filter: /.*/ }, async (args) => {
              const why = refusal(args.path, args.kind, args.with ?? {});
              if (why) return { errors: [{ text: why }] };
              const pkg = (ALLOWED_PACKAGES as readonly string[]).includes(args.path) ? (args.path as AllowedPackage) : null;
              if (!pkg) return { path: args.path, external: true };
              try {
                used.set(pkg, await RUNTIME_OF[pkg]());
              } catch (err) {
                return { errors: [{ text: describeError(err) }] };
              }
              return { path: `./${RUNTIME_FILE[pkg]}`, external: true };
            });
            // Nothing is read from disk for learner code: every import above is external or refused.
            build.onLoad({ filter: /.*/ }, (args) => ({ errors: [{ text: `'${path.basename(args.path)}' cannot be read: your program is this one file` }] }));
          },
        },
      ],
    });
    const build = context.rebuild();
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        void context?.cancel();
        reject(new KafkaIqError('COMPILE_FAILED', `program.ts: compiling took longer than ${COMPILE_LIMITS.timeoutMs / 1000} s`));
      }, COMPILE_LIMITS.timeoutMs);
    });
    const result = await Promise.race([build, timeout]);
    const output = result.outputFiles?.[0];
    if (!output) throw new KafkaIqError('COMPILE_FAILED', 'program.ts: the compiler produced no output');
    if (output.contents.byteLength > COMPILE_LIMITS.maxOutputBytes) {
      throw new KafkaIqError('COMPILE_FAILED', `program.ts: the compiled program is larger than ${COMPILE_LIMITS.maxOutputBytes / 1024 / 1024} MB`);
    }
    fs.writeFileSync(outfile, output.contents);
    // Each runtime the program imports sits next to it under a fixed name (the sandbox binds the same names).
    for (const [pkg, runtime] of used) {
      const link = path.join(dir, RUNTIME_FILE[pkg]);
      fs.rmSync(link, { force: true });
      fs.symlinkSync(runtime, link);
    }
    return { file: outfile, readDirs: [dir, RUNTIME_DIR], warnings: result.warnings.map((w) => toDiagnostic(w, 'warning')) };
  } catch (err) {
    if (err instanceof KafkaIqError) throw err;
    throw compileFailure((err as esbuild.BuildFailure).errors ?? []);
  } finally {
    clearTimeout(timer);
    await context?.dispose();
  }
}

function compileFailure(errors: esbuild.Message[]): KafkaIqError {
  const first = errors[0];
  // esbuild expands a template-literal import into a glob, which matches nothing in the empty folder.
  if (first && /^Could not resolve .*\*/.test(first.text)) first.text = `${first.text}: paths (and globs) are refused; your program is this one file`;
  const where = first?.location ? `program.ts:${first.location.line}:${first.location.column + 1}` : 'program.ts';
  const failure = new KafkaIqError('COMPILE_FAILED', `${where}: ${first?.text ?? 'the program could not be compiled'}`);
  (failure as KafkaIqError & { diagnostics?: Diagnostic[] }).diagnostics = errors.map((e) => toDiagnostic(e, 'error'));
  return failure;
}
