/**
 * One program instance in its sandbox: a folder of its own on the host (a copy of its bundle, the
 * relay's sockets, its hosts file), its cgroup, the relay, and the command line that starts it.
 * Signals go to the sandbox's processes through the cgroup (a kill ends the whole tree, SIGSTOP
 * freezes it); without cgroups, to the launcher's process group.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bwrapArgs, INSIDE, launcherArgv, type SandboxRuntime } from './bubblewrap.ts';
import { InstanceCgroup, type CgroupLimits } from './cgroup.ts';
import { MODULE_GATE_NAME, moduleGateFile } from '../builtins.ts';
import { endpointsFromEnv, HostRelay, planRelay } from './relay.ts';
import type { WireTap } from '../../wire/wire-tap.ts';

export interface SandboxLimits extends CgroupLimits {
  /** The size of the tmpfs at /tmp (its pages also count as the instance's memory). */
  tmpfsBytes: number;
}

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = {
  memoryBytes: 512 * 1024 * 1024,
  pids: 128,
  // One normal process's weight (cgroup v1 cpu.shares): a program's threads together get no more.
  cpuShares: 1024,
  tmpfsBytes: 64 * 1024 * 1024,
};

/** Every sandbox folder of this server lives here; a later server sweeps a dead one's (see work-dirs.ts). */
export const SANDBOX_DIR_PREFIX = 'kafkaiq-sandbox-';
export const sandboxRoot = () => path.join(os.tmpdir(), `${SANDBOX_DIR_PREFIX}${process.pid}`);

/** What runs in the sandbox: our compiled bundle on the pinned node, or an instructor's command. */
export type SandboxedProgram = {
  /** A name for the attempt's cgroup (every instance of an attempt shares it). */
  group: string;
  instance: string;
} & (
  | {
      kind: 'bundle';
      /** program.mjs and the runtimes next to it (host paths). */
      file: string;
      /** The node flags and script, as inside the sandbox. */
      nodeArgs: (inside: { program: string; relay: string; tmp: string; gate: string }) => string[];
    }
  | {
      kind: 'command';
      command: string;
      /** Its working folder on the host, seen read-only at the same path. */
      cwd: string;
      /** Host folders it may read, at their own paths (the broker's jars, the labs' folders). */
      readDirs: string[];
    }
);

/**
 * Limits of a `--cmd` program: a JVM (two in a console pipe) sizes its heap from the host's memory,
 * which it cannot see from inside, and runs a few dozen threads each.
 */
export const COMMAND_SANDBOX_LIMITS: SandboxLimits = { memoryBytes: 1536 * 1024 * 1024, pids: 1024, cpuShares: 1024, tmpfsBytes: 256 * 1024 * 1024 };

export class InstanceSandbox {
  readonly argv: string[];
  readonly env: Record<string, string>;
  readonly cwd = '/';
  private readonly relay: HostRelay | null = null;
  private launcherPid: number | undefined;

  constructor(
    runtime: SandboxRuntime,
    program: SandboxedProgram,
    env: Record<string, string>,
    private readonly limits: SandboxLimits = DEFAULT_SANDBOX_LIMITS,
    tap: WireTap | null = null,
  ) {
    fs.mkdirSync(sandboxRoot(), { recursive: true, mode: 0o711 });
    this.dir = fs.mkdtempSync(path.join(sandboxRoot(), 'i-'));
    const owner = runtime.switchUser ? { uid: runtime.hostUid, gid: runtime.hostGid } : null;
    try {
      const sockets = path.join(this.dir, 'relay');
      const bundle = path.join(this.dir, 'program');
      fs.mkdirSync(sockets);
      fs.mkdirSync(bundle);
      // A copy of the bundle: the sandbox's uid cannot read the attempt's work dir, and the copy
      // cannot change under the running program.
      const files: Array<[string, string]> = [];
      if (program.kind === 'bundle') {
        const sources: Array<[string, string]> = bundleFiles(program.file).map((name) => [path.join(path.dirname(program.file), name), name]);
        // The run-time module gate (builtins.ts), loaded before the program.
        sources.push([moduleGateFile(), MODULE_GATE_NAME]);
        for (const [source, name] of sources) {
          const copy = path.join(bundle, name);
          fs.copyFileSync(source, copy);
          files.push([copy, name]);
        }
      }
      // A JVM command's Kafka login (lifecycle.ts): a 0600 file of the server's, copied for the sandbox's uid.
      let clientConfig: string | null = null;
      if (program.kind === 'command' && env.KAFKA_CLIENT_CONFIG) {
        clientConfig = path.join(this.dir, 'kafka-client.properties');
        fs.copyFileSync(env.KAFKA_CLIENT_CONFIG, clientConfig);
      }
      const { relayed, hostsFile } = planRelay(endpointsFromEnv(env), INSIDE.sockets);
      const hosts = path.join(this.dir, 'hosts');
      fs.writeFileSync(hosts, hostsFile);
      if (owner) for (const p of [this.dir, sockets, bundle, hosts, ...files.map(([f]) => f), ...(clientConfig ? [clientConfig] : [])]) fs.chownSync(p, owner.uid, owner.gid);
      this.relay = HostRelay.openSync(relayed, sockets, owner, tap);
      this.cgroup = runtime.cgroups ? InstanceCgroup.create(runtime.cgroups, program.group, program.instance, limits) : null;
      const common = { socketDir: sockets, hostsFile: hosts, tmpfsBytes: limits.tmpfsBytes };
      const bwrap =
        program.kind === 'bundle'
          ? bwrapArgs(runtime, {
              ...common,
              files,
              argv: [INSIDE.node, ...program.nodeArgs({ program: `${INSIDE.program}/${path.basename(program.file)}`, relay: INSIDE.relay, tmp: INSIDE.tmp, gate: `${INSIDE.program}/${MODULE_GATE_NAME}` })],
            })
          : bwrapArgs(runtime, {
              ...common,
              files: [],
              command: { readDirs: program.readDirs, cwd: program.cwd, clientConfig },
              argv: [INSIDE.node, INSIDE.command, program.command],
            });
      this.argv = launcherArgv(runtime, this.cgroup?.procsFiles ?? [], bwrap);
      this.env = { ...(program.kind === 'command' ? insideCommandEnv(env, clientConfig) : env), KAFKAIQ_RELAY: JSON.stringify(relayed), HOME: INSIDE.tmp, TMPDIR: INSIDE.tmp };
    } catch (err) {
      this.relay?.close();
      fs.rmSync(this.dir, { recursive: true, force: true });
      throw err;
    }
  }

  private readonly dir: string;
  private readonly cgroup: InstanceCgroup | null;

  /** The launcher's pid, once spawned (it becomes bwrap's monitor process). */
  attach(pid: number | undefined): void {
    this.launcherPid = pid;
  }

  /** Sends a signal to the program: through the cgroup when there is one. */
  signal(signal: NodeJS.Signals): void {
    const pid = this.launcherPid;
    if (!this.cgroup) {
      if (pid) killQuietly(-pid, signal);
      return;
    }
    if (signal === 'SIGKILL') {
      this.cgroup.killAll();
      // Killed right after its spawn, the launcher may not have joined its cgroup yet: its process
      // group (it was spawned detached, and nothing in the sandbox starts a session) holds it then.
      if (pid) killQuietly(-pid, signal);
      return;
    }
    if (signal === 'SIGSTOP') return this.cgroup.freeze();
    if (signal === 'SIGCONT') return this.cgroup.thaw();
    // Other signals (SIGTERM) go to the program's processes, not to bwrap's monitor and reaper,
    // which would turn a clean shutdown into a kill.
    for (const p of this.cgroup.pids()) {
      if (p === pid || parentOf(p) === pid) continue;
      killQuietly(p, signal);
    }
  }

  /** After the launcher exited: nothing of the sandbox is left. */
  async dispose(): Promise<void> {
    this.relay?.close();
    if (this.cgroup) {
      this.cgroup.killAll();
      await this.cgroup.remove();
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A command's env as the sandbox sees it: the Kafka settings file at its inside path. */
function insideCommandEnv(env: Record<string, string>, clientConfig: string | null): Record<string, string> {
  const host = env.KAFKA_CLIENT_CONFIG;
  if (!host || !clientConfig) return env;
  return Object.fromEntries(Object.entries(env).map(([name, value]) => [name, value.split(host).join(INSIDE.clientConfig)]));
}

/** program.mjs and the runtimes it imports (the files compile.ts puts beside it). */
function bundleFiles(file: string): string[] {
  const dir = path.dirname(file);
  return [path.basename(file), ...fs.readdirSync(dir).filter((n) => /-runtime\.mjs$/.test(n))];
}

function parentOf(pid: number): number | null {
  try {
    // Field 4 of /proc/<pid>/stat, after the command name in parentheses (which may contain spaces).
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null; // gone
  }
}

function killQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}
