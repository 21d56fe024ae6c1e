import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import readline from 'node:readline';
import type { ChildEvent, RunnerCommand } from './child/protocol.ts';
import { parseChildEvent } from './child/event-schema.ts';

/** How a learner program is started: our compiled bundle, or an instructor's command. */
export type ProgramSource =
  | { kind: 'bundle'; file: string; readDirs: string[]; writeDir: string }
  | { kind: 'command'; command: string; cwd: string };

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
 * One OS process of a learner program. The process gets its own process group (so a command's
 * whole tree can be signalled), dies with us (IPC disconnect in the wrapper; PR_SET_PDEATHSIG
 * where setpriv exists), and runs with Node's permission model: reads only its bundle, writes
 * only its temp dir, no child processes.
 */
export class ProgramInstance extends EventEmitter<{
  line: [stream: 'stdout' | 'stderr', line: string];
  event: [event: ChildEvent];
  exit: [code: number | null, signal: NodeJS.Signals | null];
}> implements ProgramProcess {
  state: InstanceState = 'starting';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly child: ChildProcess;

  constructor(
    readonly id: string,
    readonly incarnation: number,
    source: ProgramSource,
    env: Record<string, string>,
    limits: InstanceLimits = DEFAULT_INSTANCE_LIMITS,
  ) {
    super();
    const argv = commandLine(source, limits);
    this.child = spawn(argv[0]!, argv.slice(1), {
      cwd: source.kind === 'bundle' ? source.writeDir : source.cwd,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...(source.kind === 'command' && process.env.JAVA_HOME ? { JAVA_HOME: process.env.JAVA_HOME } : {}), ...env },
      stdio: ['ignore', 'pipe', 'pipe', ...(source.kind === 'bundle' ? (['ipc'] as const) : [])],
      detached: true,
    });
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.state = 'exited';
        this.emit('exit', code, signal);
        resolve({ code, signal });
      });
    });
    this.child.once('error', () => {});
    this.child.once('spawn', () => {
      if (this.state === 'starting') this.state = 'running';
    });
    for (const stream of ['stdout', 'stderr'] as const) {
      readline.createInterface({ input: this.child[stream]!, crlfDelay: Infinity }).on('line', (line) => this.emit('line', stream, line));
    }
    // Untrusted: the program can send anything over its IPC channel. Bounded and parsed; a
    // flood of messages or a malformed one is dropped (and the 10,000th ends the channel).
    let dropped = 0;
    this.child.on('message', (msg) => {
      const event = parseChildEvent(msg);
      if (event) return void this.emit('event', event);
      if (++dropped === 1) this.emit('line', 'stderr', 'kafkaiq: dropped a malformed message on the grader channel (a program must not use process.send)');
      if (dropped >= 10_000) this.child.disconnect?.();
    });
    if (source.kind === 'command' && this.child.pid) watchGroup(this.child.pid);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get alive(): boolean {
    return this.state !== 'exited';
  }

  send(command: RunnerCommand): void {
    if (this.child.connected) this.child.send(command);
  }

  signal(signal: NodeJS.Signals): void {
    if (!this.alive || !this.child.pid) return;
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

/**
 * A command may start several processes (a pipeline, a JVM and its children), and the death signal
 * set by setpriv reaches only the first. A detached watchdog kills the command's whole process
 * group once this process is gone, and exits by itself when the group is.
 */
function watchGroup(pgid: number): void {
  if (process.platform === 'win32') return;
  const script = `while kill -0 ${process.pid} 2>/dev/null && kill -0 -${pgid} 2>/dev/null; do sleep 1; done; kill -KILL -${pgid} 2>/dev/null`;
  const watchdog = spawn('/bin/sh', ['-c', script], { detached: true, stdio: 'ignore' });
  watchdog.on('error', () => {});
  watchdog.unref();
}

function commandLine(source: ProgramSource, limits: InstanceLimits): string[] {
  const guard: string[] = [];
  if (linuxTools && linuxTools.setpriv) guard.push('setpriv', '--pdeathsig', 'KILL', '--');
  if (linuxTools && linuxTools.prlimit) guard.push('prlimit', `--cpu=${limits.cpuSeconds}`, '--');
  if (source.kind === 'command') return [...guard, '/bin/sh', '-c', `exec ${source.command}`];
  return [
    ...guard,
    process.execPath,
    // Node's permission model (stable since Node 22); since Node 25 it also gates the network,
    // which a Kafka client needs.
    '--permission',
    '--allow-net',
    ...source.readDirs.map((dir) => `--allow-fs-read=${dir}`),
    `--allow-fs-write=${source.writeDir}`,
    '--disable-warning=ExperimentalWarning',
    '--enable-source-maps',
    `--max-old-space-size=${limits.memoryMb}`,
    '--unhandled-rejections=strict',
    source.file,
  ];
}
