/**
 * A control group per program instance, inside one per attempt and one per server process:
 * memory (the whole process, Buffers and tmpfs pages included, not just the V8 heap), a pids
 * limit, a CPU share and a freezer. Faults act on it: a kill ends every process of the instance's
 * tree, a pause freezes them all. cgroup v1 (what these machines mount: memory, pids, cpu,
 * freezer) and v2 are both handled; without write access (not root) there is none, and the
 * sandbox says so.
 */
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { processAlive } from '../../../core/process-alive.ts';

const ROOT = '/sys/fs/cgroup';
const V1_CONTROLLERS = ['memory', 'pids', 'cpu', 'freezer'] as const;

export interface CgroupLimits {
  /** Memory of the whole instance (heap, Buffers, native allocations, its tmpfs pages). */
  memoryBytes: number;
  /** Processes and threads (Node itself uses about a dozen threads). */
  pids: number;
  /** Relative CPU weight, as cgroup v1's cpu.shares (1024 is a normal process). */
  cpuShares: number;
}

export type CgroupVersion = 'v1' | 'v2';

/** Which cgroup layout this host offers us, or null when we cannot create groups. */
export function cgroupSupport(): CgroupVersion | null {
  try {
    if (fs.existsSync(path.join(ROOT, 'cgroup.controllers'))) {
      fs.accessSync(ROOT, fs.constants.W_OK);
      return 'v2';
    }
    for (const c of V1_CONTROLLERS) fs.accessSync(path.join(ROOT, c), fs.constants.W_OK);
    return 'v1';
  } catch {
    // Not writable (an ordinary user) or not mounted: no cgroups, the sandbox still runs.
    return null;
  }
}

/** The folder of this server's groups: named by its pid, so a later server can sweep a dead one's. */
const serverGroup = () => `kafkaiq/${process.pid}`;

export class InstanceCgroup {
  private constructor(
    private readonly version: CgroupVersion,
    /** The instance's folder in each hierarchy (one for v2). */
    private readonly dirs: string[],
    private readonly parents: string[],
  ) {}

  /** Creates kafkaiq/<server pid>/<attempt>/<instance> and sets its limits. */
  static create(version: CgroupVersion, attempt: string, instance: string, limits: CgroupLimits): InstanceCgroup {
    const rel = path.join(serverGroup(), safe(attempt), safe(instance));
    if (version === 'v2') {
      const dir = path.join(ROOT, rel);
      // v2 hands controllers down level by level.
      let at = ROOT;
      for (const part of rel.split('/')) {
        // No cpu controller in v2: nested weights would make every program together weigh as one
        // process against the host's (see the v1 cpu group below).
        tryWrite(path.join(at, 'cgroup.subtree_control'), '+memory +pids');
        at = path.join(at, part);
        fs.mkdirSync(at, { recursive: true });
      }
      write(path.join(dir, 'memory.max'), String(limits.memoryBytes));
      tryWrite(path.join(dir, 'memory.swap.max'), '0');
      write(path.join(dir, 'pids.max'), String(limits.pids));
      return new InstanceCgroup(version, [dir], [path.dirname(dir)]);
    }
    // The cpu group is flat, right under the root: a nested group weighs as ONE entity against
    // its siblings, so kafkaiq/<pid>/... would give all programs together the CPU of a single
    // host process (a correct program then timed out under load). Flat, each instance weighs as
    // one process with cpuShares, whatever threads it starts.
    const dirs = V1_CONTROLLERS.map((c) => (c === 'cpu' ? path.join(ROOT, c, `${rel.replace(/\//g, '-')}`) : path.join(ROOT, c, rel)));
    for (const dir of dirs) fs.mkdirSync(dir, { recursive: true });
    const [memory, pids, cpu] = dirs as [string, string, string, string];
    write(path.join(memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
    // With swap on, memory+swap gets the same limit: no escape into swap.
    tryWrite(path.join(memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
    write(path.join(pids, 'pids.max'), String(limits.pids));
    write(path.join(cpu, 'cpu.shares'), String(limits.cpuShares));
    return new InstanceCgroup(version, dirs, dirs.filter((_, i) => V1_CONTROLLERS[i] !== 'cpu').map((d) => path.dirname(d)));
  }

  /** The files a launcher writes its own pid into before it execs the sandbox (so nothing starts outside). */
  get procsFiles(): string[] {
    return this.dirs.map((d) => path.join(d, 'cgroup.procs'));
  }

  /** Every process of the instance (host pids). */
  pids(): number[] {
    try {
      return fs.readFileSync(this.procsFiles[0]!, 'utf8').split('\n').filter(Boolean).map(Number);
    } catch {
      // The group is gone: no processes.
      return [];
    }
  }

  freeze(): void {
    if (this.version === 'v2') write(path.join(this.dirs[0]!, 'cgroup.freeze'), '1');
    else write(path.join(this.dirs[3]!, 'freezer.state'), 'FROZEN');
  }

  thaw(): void {
    if (this.version === 'v2') tryWrite(path.join(this.dirs[0]!, 'cgroup.freeze'), '0');
    else tryWrite(path.join(this.dirs[3]!, 'freezer.state'), 'THAWED');
  }

  /** SIGKILLs every process of the tree; frozen first (v1), so none forks meanwhile. */
  killAll(): void {
    if (this.version === 'v2' && tryWrite(path.join(this.dirs[0]!, 'cgroup.kill'), '1')) return;
    tryFreeze(this);
    for (let round = 0; round < 5; round++) {
      const pids = this.pids();
      if (!pids.length) break;
      for (const pid of pids) killQuietly(pid, 'SIGKILL');
    }
    // A SIGKILLed frozen process dies once thawed.
    this.thaw();
  }

  /** Removes the instance's group (once its processes are gone) and the attempt's when it is empty. */
  async remove(): Promise<void> {
    for (let i = 0; i < 20 && this.pids().length; i++) await sleep(25);
    for (const dir of this.dirs) rmdirQuietly(dir);
    for (const dir of this.parents) rmdirQuietly(dir);
  }
}

/**
 * Removes the groups of KafkaIQ servers that are gone (killed before they could tidy up). Groups
 * of live servers (other checkouts on the same machine) are left alone.
 */
export function sweepStaleCgroups(): number {
  let removed = 0;
  const bases = fs.existsSync(path.join(ROOT, 'cgroup.controllers')) ? [path.join(ROOT, 'kafkaiq')] : V1_CONTROLLERS.map((c) => path.join(ROOT, c, 'kafkaiq'));
  for (const base of bases) {
    let servers: string[];
    try {
      servers = fs.readdirSync(base);
    } catch {
      continue; // no groups of ours here
    }
    for (const server of servers) {
      if (!/^\d+$/.test(server) || Number(server) === process.pid || processAlive(Number(server))) continue;
      removed += removeTree(path.join(base, server));
    }
  }
  // The flat cpu groups of v1: kafkaiq-<pid>-<attempt>-<instance>.
  const cpuRoot = path.join(ROOT, 'cpu');
  try {
    for (const name of fs.readdirSync(cpuRoot)) {
      const owner = /^kafkaiq-(\d+)-/.exec(name)?.[1];
      if (owner && Number(owner) !== process.pid && !processAlive(Number(owner))) removed += removeTree(path.join(cpuRoot, name));
    }
  } catch {
    // no v1 cpu hierarchy here
  }
  return removed;
}

function removeTree(dir: string): number {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    // Two servers starting together sweep the same stale group: the other one removed it first
    // (CI: a start of tenancy-two-servers exited with ENOENT here).
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
  let n = 0;
  for (const entry of entries) if (entry.isDirectory()) n += removeTree(path.join(dir, entry.name));
  // A group with processes left cannot be removed; kill them first (they belong to a dead server).
  try {
    for (const pid of fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) killQuietly(Number(pid), 'SIGKILL');
  } catch {
    // no cgroup.procs: nothing to kill
  }
  tryWrite(path.join(dir, 'freezer.state'), 'THAWED');
  return rmdirQuietly(dir) ? n + 1 : n;
}

const safe = (name: string) => name.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 100) || 'x';

function write(file: string, value: string): void {
  fs.writeFileSync(file, value);
}

function tryWrite(file: string, value: string): boolean {
  try {
    fs.writeFileSync(file, value);
    return true;
  } catch {
    // Optional knob (memsw without swap accounting, v2 delegation already set): fine without it.
    return false;
  }
}

function tryFreeze(group: InstanceCgroup): void {
  try {
    group.freeze();
  } catch {
    // Killing works unfrozen too; freezing only stops a fork race.
  }
}

function killQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}

function rmdirQuietly(dir: string): boolean {
  try {
    fs.rmdirSync(dir);
    return true;
  } catch {
    // Busy (processes left, another instance of the attempt) or already removed.
    return false;
  }
}
