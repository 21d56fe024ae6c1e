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

export interface SandboxedProgram {
  /** program.mjs and the runtimes next to it (host paths). */
  file: string;
  /** A name for the attempt's cgroup (every instance of an attempt shares it). */
  group: string;
  instance: string;
  /** The node flags and script, as inside the sandbox. */
  nodeArgs: (inside: { program: string; relay: string; tmp: string; gate: string }) => string[];
}

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
      const sources: Array<[string, string]> = bundleFiles(program.file).map((name) => [path.join(path.dirname(program.file), name), name]);
      // The run-time module gate (builtins.ts), loaded before the program.
      sources.push([moduleGateFile(), MODULE_GATE_NAME]);
      for (const [source, name] of sources) {
        const copy = path.join(bundle, name);
        fs.copyFileSync(source, copy);
        files.push([copy, name]);
      }
      const { relayed, hostsFile } = planRelay(endpointsFromEnv(env), INSIDE.sockets);
      const hosts = path.join(this.dir, 'hosts');
      fs.writeFileSync(hosts, hostsFile);
      if (owner) for (const p of [this.dir, sockets, bundle, hosts, ...files.map(([f]) => f)]) fs.chownSync(p, owner.uid, owner.gid);
      this.relay = HostRelay.openSync(relayed, sockets, owner, tap);
      this.cgroup = runtime.cgroups ? InstanceCgroup.create(runtime.cgroups, program.group, program.instance, limits) : null;
      const command = [INSIDE.node, ...program.nodeArgs({ program: `${INSIDE.program}/${path.basename(program.file)}`, relay: INSIDE.relay, tmp: INSIDE.tmp, gate: `${INSIDE.program}/${MODULE_GATE_NAME}` })];
      const bwrap = bwrapArgs(runtime, { files, socketDir: sockets, hostsFile: hosts, tmpfsBytes: limits.tmpfsBytes, command });
      this.argv = launcherArgv(runtime, this.cgroup?.procsFiles ?? [], bwrap);
      this.env = { ...env, KAFKAIQ_RELAY: JSON.stringify(relayed), HOME: INSIDE.tmp, TMPDIR: INSIDE.tmp };
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
    if (signal === 'SIGKILL') return this.cgroup.killAll();
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
