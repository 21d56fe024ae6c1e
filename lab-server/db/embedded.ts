/**
 * The lab server's side of one embedded PostgreSQL (embedded-child.ts): starts the child process,
 * waits until it listens, stops it. One child serves one attempt (pool.ts never hands it on).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { z } from 'zod';
import { KafkaIqError } from '../../src/shared/errors.ts';
import { ROOT_DIR } from '../core/paths.ts';

/** A data directory dumped right after initdb, before any connection: a file and its SHA-256. */
export interface PristineSnapshot {
  file: string;
  sha256: string;
}

/**
 * How a child starts (its argv, as JSON): from the snapshot, or by initdb, then writing the
 * snapshot to `makeSnapshot` when given (the first database of a pool).
 */
export const embeddedStartSchema = z
  .object({
    snapshot: z.object({ file: z.string().min(1).max(4096), sha256: z.string().regex(/^[0-9a-f]{64}$/) }).strict().optional(),
    makeSnapshot: z.string().min(1).max(4096).optional(),
  })
  .strict()
  .refine((s) => !(s.snapshot && s.makeSnapshot), 'either restore a snapshot or make one');
export type EmbeddedStart = z.infer<typeof embeddedStartSchema>;

/** lab server -> child */
export type EmbeddedCommand = { t: 'stats'; id: number };
/** child -> lab server */
export type EmbeddedMessage =
  | { t: 'ready'; port: number; password: string; startMs: number; rssMb: number; cpuMs: number; snapshot?: PristineSnapshot }
  | { t: 'failed'; error: string }
  | { t: 'done'; id: number; ok: boolean; error?: string; rssMb?: number; cpuMs?: number };

const CHILD = path.join(ROOT_DIR, 'lab-server/db/embedded-child.mjs');
/** PGlite compiles and boots PostgreSQL in WebAssembly: seconds on a quiet machine, more under load. */
const START_TIMEOUT_MS = 180_000;

export class EmbeddedDatabase {
  private nextId = 1;
  private readonly pending = new Map<number, (message: EmbeddedMessage & { t: 'done' }) => void>();
  private exitedFlag = false;

  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
    /** Made by the child for this database only (wire-auth.ts): nobody without the URL connects. */
    private readonly password: string,
    /** How long PGlite took to start, inside the child. */
    readonly startMs: number,
    /** The child's resident memory right after the start. */
    readonly rssMb: number,
    /** The child's CPU time (user and system) when it was ready. */
    readonly startCpuMs: number,
    /** The snapshot this child wrote (started with `makeSnapshot`). */
    readonly snapshot: PristineSnapshot | null,
  ) {
    child.on('message', (message: EmbeddedMessage) => {
      if (message.t !== 'done') return;
      this.pending.get(message.id)?.(message);
      this.pending.delete(message.id);
    });
    // An idle database must not keep the lab server (or a CLI run) alive: only pending commands,
    // which have timers of their own, do.
    child.unref();
    (child as unknown as { channel?: { unref(): void } }).channel?.unref();
    for (const stream of [child.stdin, child.stderr] as unknown as ({ unref?: () => void } | null)[]) stream?.unref?.();
    child.once('exit', () => {
      this.exitedFlag = true;
      for (const resolve of this.pending.values()) resolve({ t: 'done', id: 0, ok: false, error: 'the embedded database exited' });
      this.pending.clear();
    });
  }

  /** A connection string for the learner's program and the grader: user postgres, this database's password. */
  get url(): string {
    return `postgresql://postgres:${this.password}@127.0.0.1:${this.port}/postgres`;
  }

  get alive(): boolean {
    return !this.exitedFlag;
  }

  /** A new database: restored from `start.snapshot`, or initdb'd (and dumped to `start.makeSnapshot`). */
  static async start(start: EmbeddedStart = {}): Promise<EmbeddedDatabase> {
    const argv = JSON.stringify(embeddedStartSchema.parse(start));
    // stdin is a pipe the child watches: it exits when we die, however we die (IPC closes too).
    // --liftoff-only: V8 compiles PostgreSQL's WebAssembly with its baseline compiler only. An
    // attempt's database lives for one grade, and tiering its hot functions up to TurboFan costs
    // more CPU than that faster code gives back within it (bench:db prints both).
    const child = spawn(process.execPath, ['--liftoff-only', CHILD, argv], { cwd: ROOT_DIR, stdio: ['pipe', 'ignore', 'pipe', 'ipc'] });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4_000);
    });
    // A child that fails to start also never sends 'ready': the wait below reports it with its stderr.
    child.on('error', () => {});
    const fail = (why: string) =>
      new KafkaIqError(
        'DATABASE_UNAVAILABLE',
        `The embedded PostgreSQL (PGlite) did not start: ${why}. Check that 'npm install' completed (node_modules/@electric-sql/pglite), or set DATABASE_URL to a PostgreSQL server.`,
      );
    const ready = await new Promise<EmbeddedMessage & { t: 'ready' }>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(fail(`no answer within ${START_TIMEOUT_MS / 1000} s`));
      }, START_TIMEOUT_MS);
      child.on('message', (message: EmbeddedMessage) => {
        if (message.t === 'ready') {
          clearTimeout(timer);
          resolve(message);
        } else if (message.t === 'failed') {
          clearTimeout(timer);
          reject(fail(message.error));
        }
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        // Node ends a crash report with its version: the error line is the useful one.
        const lines = stderr.trim().split('\n').filter((l) => l.trim() && !/^Node\.js v/.test(l));
        const last = lines.find((l) => /Error\b/.test(l)) ?? lines.pop();
        reject(fail(`its process exited (${signal ?? `code ${code}`})${last ? `: ${last.slice(0, 300)}` : ''}`));
      });
    });
    child.stderr!.removeAllListeners('data');
    child.stderr!.resume();
    return new EmbeddedDatabase(child, ready.port, ready.password, ready.startMs, ready.rssMb, ready.cpuMs, ready.snapshot ?? null);
  }

  private command(t: 'stats', timeoutMs: number): Promise<EmbeddedMessage & { t: 'done' }> {
    if (!this.alive) return Promise.resolve({ t: 'done', id: 0, ok: false, error: 'the embedded database exited' });
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve({ t: 'done', id, ok: false, error: `no answer within ${timeoutMs / 1000} s` });
      }, timeoutMs);
      this.pending.set(id, (message) => {
        clearTimeout(timer);
        resolve(message);
      });
      this.child.send({ t, id } satisfies EmbeddedCommand);
    });
  }

  /** The child's resident memory (MB) and CPU time so far (ms), now. */
  async currentStats(): Promise<{ rssMb: number; cpuMs: number } | null> {
    const done = await this.command('stats', 10_000);
    return done.ok && done.rssMb !== undefined && done.cpuMs !== undefined ? { rssMb: done.rssMb, cpuMs: done.cpuMs } : null;
  }

  /** Ends the process at once: its data lives only in its memory, so nothing is left to save or undo. */
  async stop(): Promise<void> {
    if (!this.alive) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    // Whoever awaits the stop waits for the exit: the process stays alive that long.
    this.child.ref();
    this.child.kill('SIGKILL');
    await exited;
  }
}
