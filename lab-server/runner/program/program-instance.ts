import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import os from 'node:os';
import { CHANNEL_FD_ENV, type ChildEvent, type RunnerCommand } from './child/protocol.ts';
import { BoundedLineSplitter, DEFAULT_LINE_LIMITS } from './line-splitter.ts';
import { moduleGateFile } from './builtins.ts';
import fs from 'node:fs';
import path from 'node:path';
import { COMMAND_SANDBOX_LIMITS, InstanceSandbox } from './sandbox/launch.ts';
import type { SandboxRuntime } from './sandbox/bubblewrap.ts';
import { sandboxPolicy } from './sandbox/policy.ts';
import { parseChildEvent } from './child/event-schema.ts';
import { WireTap } from '../wire/wire-tap.ts';

/** How a learner program is started: our compiled bundle, or an instructor's command. */
export type ProgramSource =
  | { kind: 'bundle'; file: string; readDirs: string[]; writeDir: string }
  | { kind: 'command'; command: string; cwd: string; writeDir: string };

export interface InstanceLimits {
  memoryMb: number;
  cpuSeconds: number;
}

export const DEFAULT_INSTANCE_LIMITS: InstanceLimits = { memoryMb: 256, cpuSeconds: 120 };

export type InstanceState = 'starting' | 'running' | 'paused' | 'exited';

/**
 * What the grader does with one process of the program, whoever started it: the supervisor's
 * ProgramInstance, or a fake one in the nemesis unit tests.
 */
export interface ProgramProcess {
  readonly id: string;
  readonly incarnation: number;
  state: InstanceState;
  readonly alive: boolean;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  send(command: RunnerCommand): void;
  /**
   * Whether its calls, crash points and transactions are read on the wire by the sandbox's relay
   * (runner/wire/wire-tap.ts) rather than reported from inside its process.
   */
  readonly wireWatched?: boolean;
  /** Read on the wire: when it last asked the broker for records (0: never); undefined when not wire-watched. */
  readonly lastFetchAt?: number;
  /** Read on the wire: when it last sent the broker any request (0: never); undefined when not wire-watched. */
  readonly lastRequestAt?: number;
  /** Read on the wire: a transaction of its own is open with records in it; undefined when not wire-watched. */
  readonly transactionWithRecordsOpen?: boolean;
  /** Read on the wire: when it last sent its database a statement (0: never); undefined when not wire-watched. */
  readonly lastQueryAt?: number;
  /** Read on the wire: a producer of its own with a transaction carrying records open (null: none); undefined when not wire-watched. */
  openTransactionOnWire?(): { transactionalId: string } | null | undefined;
  /** When it was started (ms since the epoch). */
  readonly startedAt?: number;
  signal(signal: NodeJS.Signals): void;
  pause(): void;
  resume(): void;
  stop(graceMs?: number): Promise<void>;
  kill(): Promise<void>;
  on(event: 'event', listener: (event: ChildEvent) => void): unknown;
  on(event: 'exit', listener: (code: number | null, signal: NodeJS.Signals | null) => void): unknown;
  once(event: 'exit', listener: (code: number | null, signal: NodeJS.Signals | null) => void): unknown;
  off(event: 'event', listener: (event: ChildEvent) => void): unknown;
  off(event: 'exit', listener: (code: number | null, signal: NodeJS.Signals | null) => void): unknown;
}

const linuxTools = process.platform === 'linux' && {
  setpriv: spawnSync('setpriv', ['--version']).status === 0,
  prlimit: spawnSync('prlimit', ['--version']).status === 0,
};

/**
 * The folders of the checkout a `--cmd` program reads (its command's relative paths): the
 * broker's jars and the labs' folders, where command fixtures keep their sources.
 */
const COMMAND_READ_DIRS = ['broker/lib', 'labs'];

/** The runner's end of the channel to the wrapper is this file descriptor in the child. */
const CHANNEL_FD = 3;
/** The longest channel message read (an event is a few hundred bytes). */
const CHANNEL_LIMITS = { maxLineBytes: 64 * 1024, maxTotalBytes: 256 * 1024 * 1024 };

/**
 * One OS process of a learner program. A compiled bundle runs in its own sandbox
 * (sandbox/launch.ts: bubblewrap, a cgroup, the grader's relay) when this host has one, and under
 * Node's permission model either way: reads only its bundle, writes only its temp dir, no child
 * processes, no workers. Its output and channel are read through bounded line splitters, so no
 * output can grow the server's memory. It dies with us (the channel closes; PR_SET_PDEATHSIG
 * where setpriv exists; bwrap's --die-with-parent).
 */
export class ProgramInstance extends EventEmitter<{
  line: [stream: 'stdout' | 'stderr', line: string];
  event: [event: ChildEvent];
  exit: [code: number | null, signal: NodeJS.Signals | null];
}> implements ProgramProcess {
  state: InstanceState = 'starting';
  readonly startedAt = Date.now();
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly child: ChildProcess;
  private readonly sandbox: InstanceSandbox | null;
  private readonly tap: WireTap | null;

  constructor(
    readonly id: string,
    readonly incarnation: number,
    source: ProgramSource,
    env: Record<string, string>,
    limits: InstanceLimits = DEFAULT_INSTANCE_LIMITS,
  ) {
    super();
    const policy = sandboxPolicy();
    const channelEnv: Record<string, string> = source.kind === 'bundle' ? { [CHANNEL_FD_ENV]: String(CHANNEL_FD) } : {};
    this.tap = policy.sandboxed ? new WireTap() : null;
    this.sandbox = this.tap && policy.sandboxed ? sandboxFor(policy.runtime, source, id, incarnation, { ...env, ...channelEnv }, limits, this.tap) : null;
    this.tap?.on('event', (event) => this.emit('event', event));
    this.tap?.on('line', (line) => this.emit('line', 'stderr', `[grader] ${line}`));
    const argv = this.sandbox ? withCpuLimit(this.sandbox.argv, limits) : commandLine(source, limits);
    const baseEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', ...(source.kind === 'command' && process.env.JAVA_HOME ? { JAVA_HOME: process.env.JAVA_HOME } : {}) };
    try {
      this.child = spawn(argv[0]!, argv.slice(1), {
        cwd: this.sandbox ? this.sandbox.cwd : source.kind === 'bundle' ? source.writeDir : source.cwd,
        env: this.sandbox ? { PATH: '/usr/bin:/bin', ...this.sandbox.env } : { ...baseEnv, ...channelEnv, ...env },
        stdio: ['ignore', 'pipe', 'pipe', ...(source.kind === 'bundle' ? (['pipe'] as const) : [])],
        detached: true,
      });
    } catch (err) {
      void this.sandbox?.dispose();
      throw err;
    }
    this.sandbox?.attach(this.child.pid);
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (exitCode, exitSignal) => {
        let [code, signal] = [exitCode, exitSignal];
        // bwrap reports a program killed by a signal as 128 + the signal's number.
        if (this.sandbox && !signal && code !== null && code > 128 && code < 128 + 65) {
          const number = code - 128;
          const name = Object.entries(os.constants.signals).find(([, n]) => n === number)?.[0] as NodeJS.Signals | undefined;
          if (name) [code, signal] = [null, name];
        }
        const done = () => {
          this.tap?.dropHeld();
          this.state = 'exited';
          this.emit('exit', code, signal);
          resolve({ code, signal });
        };
        if (this.sandbox) void this.sandbox.dispose().then(done, done);
        else done();
      });
    });
    // 'exit' above reports the end; an unheard 'error' (a failed kill, say) would crash the server.
    this.child.once('error', () => {});
    this.child.once('spawn', () => {
      if (this.state === 'starting') this.state = 'running';
    });
    for (const stream of ['stdout', 'stderr'] as const) {
      const splitter = new BoundedLineSplitter(
        (line, cut) => this.emit('line', stream, cut ? `${line} … [line cut at ${DEFAULT_LINE_LIMITS.maxLineBytes} bytes]` : line),
        DEFAULT_LINE_LIMITS,
        () => this.emit('line', 'stderr', `[${stream} is over ${DEFAULT_LINE_LIMITS.maxTotalBytes / 1024 / 1024} MB: the rest is discarded]`),
      );
      this.child[stream]!.on('data', (chunk: Buffer) => splitter.push(chunk)).on('end', () => splitter.end());
    }
    const channel = this.child.stdio[CHANNEL_FD] as Socket | undefined;
    if (channel) {
      const splitter = new BoundedLineSplitter((line, cut) => {
        if (cut) return;
        const event = parseEvent(line);
        if (!event) return;
        // Watched on the wire, the program's own reports decide nothing: the wire's do.
        if (!this.tap) this.emit('event', event);
      }, CHANNEL_LIMITS);
      // A reset channel is a program that died: its events end there, and 'exit' says why.
      channel.on('data', (chunk: Buffer) => splitter.push(chunk)).on('error', () => {});
    }
    // In the sandbox the cgroup and bubblewrap's --die-with-parent end every process of a command.
    if (source.kind === 'command' && !this.sandbox && this.child.pid) watchGroup(this.child.pid);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get alive(): boolean {
    return this.state !== 'exited';
  }

  /** Whether this instance runs in a bubblewrap sandbox. */
  get sandboxed(): boolean {
    return this.sandbox !== null;
  }

  get wireWatched(): boolean {
    return this.tap !== null;
  }

  /** What the relay saw of the instance's own producers: one with a transaction carrying records open (undefined: not wire-watched). */
  openTransactionOnWire(): { transactionalId: string } | null | undefined {
    return this.tap ? this.tap.openTransactionCarryingRecords() : undefined;
  }

  get lastFetchAt(): number | undefined {
    return this.tap?.lastFetchAt;
  }

  get lastRequestAt(): number | undefined {
    return this.tap?.lastRequestAt;
  }

  get transactionWithRecordsOpen(): boolean | undefined {
    return this.tap?.transactionWithRecordsOpen;
  }

  get lastQueryAt(): number | undefined {
    return this.tap?.lastQueryAt;
  }

  send(command: RunnerCommand): void {
    if (this.tap) {
      // Every arm lives in the tap alone, outside the process: the program only hears 'continue'
      // (a frozen in-process wrapper of an unsandboxed run would wait for it; here it is harmless).
      this.tap.command(command);
      if (command.t === 'arm') return;
    }
    const channel = this.child.stdio[CHANNEL_FD] as Socket | undefined;
    if (channel && !channel.destroyed && channel.writable) channel.write(`${JSON.stringify(command)}\n`);
  }

  signal(signal: NodeJS.Signals): void {
    if (!this.alive || !this.child.pid) return;
    if (signal === 'SIGKILL') this.tap?.dropHeld();
    if (this.sandbox) return this.sandbox.signal(signal);
    try {
      process.kill(-this.child.pid, signal);
    } catch {
      this.child.kill(signal);
    }
  }

  pause(): void {
    this.signal('SIGSTOP');
    if (this.alive) this.state = 'paused';
  }

  resume(): void {
    this.signal('SIGCONT');
    if (this.alive) this.state = 'running';
    this.send({ t: 'continue' });
  }

  /** SIGTERM, then SIGKILL after the grace period. Resolves once the process is gone. */
  async stop(graceMs = 3_000): Promise<void> {
    if (!this.alive) return;
    if (this.state === 'paused') this.signal('SIGCONT');
    this.signal('SIGTERM');
    const timer = setTimeout(() => this.signal('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  async kill(): Promise<void> {
    this.signal('SIGKILL');
    await this.exited;
  }
}

/** The sandbox of one instance: our bundle on the pinned node, or a command with the system's programs. */
function sandboxFor(runtime: SandboxRuntime, source: ProgramSource, id: string, incarnation: number, env: Record<string, string>, limits: InstanceLimits, tap: WireTap): InstanceSandbox {
  const names = { instance: `${id}-${incarnation}-${process.hrtime.bigint()}` };
  if (source.kind === 'bundle') {
    const program = {
      kind: 'bundle' as const,
      file: source.file,
      group: groupName(source.writeDir),
      ...names,
      nodeArgs: (inside: { program: string; relay: string; tmp: string; gate: string }) =>
        nodeArgs(inside.program, [inside.program.replace(/\/[^/]+$/, ''), inside.relay], inside.tmp, limits, inside.gate, inside.relay),
    };
    return new InstanceSandbox(runtime, program, env, undefined, tap);
  }
  // A JVM outside /usr (JAVA_HOME elsewhere) is seen at its own path too.
  const javaHome = process.env.JAVA_HOME && !process.env.JAVA_HOME.startsWith('/usr/') && fs.existsSync(process.env.JAVA_HOME) ? [process.env.JAVA_HOME] : [];
  const program = {
    kind: 'command' as const,
    command: source.command,
    cwd: source.cwd,
    readDirs: [...COMMAND_READ_DIRS.map((d) => path.join(source.cwd, d)).filter((d) => fs.existsSync(d)), ...javaHome],
    group: groupName(source.writeDir),
    ...names,
  };
  return new InstanceSandbox(runtime, program, env, COMMAND_SANDBOX_LIMITS, tap);
}

/**
 * A command may start several processes (a pipeline, a JVM and its children), and the death signal
 * set by setpriv reaches only the first. A detached watchdog kills the command's whole process
 * group once this process is gone, and exits by itself when the group is.
 */
function watchGroup(pgid: number): void {
  if (process.platform === 'win32') return;
  const script = `while kill -0 ${process.pid} 2>/dev/null && kill -0 -${pgid} 2>/dev/null; do sleep 1; done; kill -KILL -${pgid} 2>/dev/null`;
  const watchdog = spawn('/bin/sh', ['-c', script], { detached: true, stdio: 'ignore' });
  // No /bin/sh: no watchdog, and the death signal still ends the first process.
  watchdog.on('error', () => {});
  watchdog.unref();
}

/** The command line of a program run without the sandbox (a learner's own machine): the permission model and the module gate. */
export function commandLine(source: ProgramSource, limits: InstanceLimits): string[] {
  const guard: string[] = [];
  if (linuxTools && linuxTools.setpriv) guard.push('setpriv', '--pdeathsig', 'KILL', '--');
  if (linuxTools && linuxTools.prlimit) guard.push('prlimit', `--cpu=${limits.cpuSeconds}`, '--');
  if (source.kind === 'command') return [...guard, '/bin/sh', '-c', `exec ${source.command}`];
  // The gate is read from the runtime folder, which the program may read but never write.
  const gate = moduleGateFile();
  return [...guard, process.execPath, ...nodeArgs(source.file, [...source.readDirs, gate], source.writeDir, limits, gate)];
}

/** The sandbox's command line with the CPU-time limit (inherited by bwrap and the program). */
function withCpuLimit(argv: string[], limits: InstanceLimits): string[] {
  if (!(linuxTools && linuxTools.prlimit)) return argv;
  return ['prlimit', `--cpu=${limits.cpuSeconds}`, '--', ...argv];
}

/** Node's flags for a learner bundle, inside or outside the sandbox. */
function nodeArgs(file: string, readDirs: string[], writeDir: string, limits: InstanceLimits, gate: string, preload?: string): string[] {
  return [
    // Node's permission model (stable since Node 22); since Node 25 it also gates the network,
    // which a Kafka client needs. No --allow-child-process, no --allow-worker.
    '--permission',
    '--allow-net',
    ...readDirs.map((dir) => `--allow-fs-read=${dir}`),
    `--allow-fs-write=${writeDir}`,
    '--disable-warning=ExperimentalWarning',
    '--disable-sigusr1',
    '--enable-source-maps',
    `--max-old-space-size=${limits.memoryMb}`,
    '--unhandled-rejections=strict',
    // First: every later import, the preload's and the program's, goes through the gate (builtins.ts).
    '--import',
    gate,
    ...(preload ? ['--import', preload] : []),
    file,
  ];
}

/** The cgroup name shared by an attempt's instances: its work dir (unique per attempt). */
function groupName(writeDir: string): string {
  return writeDir.replace(/^\/+/, '').replace(/\//g, '_');
}

/**
 * One channel line as an event. Untrusted: the program can write to the channel itself, so a line
 * is parsed against the one shape the wrapper sends (child/event-schema.ts); anything else is dropped.
 */
function parseEvent(line: string): ChildEvent | null {
  try {
    return parseChildEvent(JSON.parse(line));
  } catch {
    return null; // not JSON: not ours
  }
}
