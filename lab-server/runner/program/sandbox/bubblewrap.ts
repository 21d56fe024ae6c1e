/**
 * Finds out once whether learner programs can run in a bubblewrap sandbox here, and builds the
 * bwrap command line of one instance. What a sandbox sees: the pinned node binary and the shared
 * libraries it links, the instance's bundle (program.mjs and the runtimes it imports), the relay's
 * sockets, a hosts file, its own /proc and a minimal /dev, all read-only; a size-capped tmpfs at
 * /tmp (its cwd and only writable place). New user, pid, mount, ipc, uts, cgroup and network
 * namespaces; no capabilities; it dies with its parent.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { cgroupSupport, type CgroupVersion } from './cgroup.ts';

export const INNER_RELAY = fileURLToPath(new URL('./inner-relay.mjs', import.meta.url));
export const INNER_COMMAND = fileURLToPath(new URL('./inner-command.mjs', import.meta.url));
/** Where things are inside the sandbox. */
export const INSIDE = {
  node: '/sandbox/node',
  relay: '/sandbox/relay.mjs',
  command: '/sandbox/command.mjs',
  program: '/program',
  sockets: '/relay',
  tmp: '/tmp',
  clientConfig: '/sandbox/kafka-client.properties',
} as const;

/**
 * What a `--cmd` program (a JVM, a Python or librdkafka client) sees of the system besides its
 * own folders, read-only: the system's programs and libraries (/usr, with the merged-usr links)
 * and the few files of /etc that a JVM, Python and the C library read. Not the rest of /etc, not
 * /home, /root, /var or the server's state.
 */
const SYSTEM_LINKS: Array<[string, string]> = [['usr/bin', '/bin'], ['usr/sbin', '/sbin'], ['usr/lib', '/lib'], ['usr/lib64', '/lib64']];
const SYSTEM_ETC = ['/etc/alternatives', '/etc/java-17-openjdk', '/etc/java-21-openjdk', '/etc/ssl', '/etc/ld.so.cache', '/etc/localtime', '/etc/nsswitch.conf', '/etc/python3', '/etc/mime.types'];

export interface SandboxRuntime {
  bwrap: string;
  /** The node binary the server runs on (the pinned one), resolved. */
  nodeBinary: string;
  /** The shared libraries the node binary links (bound one by one). */
  libraries: string[];
  /** The identity of sandboxed processes outside the sandbox: the dedicated uid when we are root, else ours. */
  hostUid: number;
  hostGid: number;
  /** Root switches to the dedicated uid before bwrap starts (setpriv). */
  switchUser: boolean;
  /** The uid/gid the program sees inside. */
  insideUid: number;
  cgroups: CgroupVersion | null;
}

export type SandboxProbe = { ok: true; runtime: SandboxRuntime } | { ok: false; reason: string };

/** The dedicated uid/gid of sandboxed programs (no account has it on these machines). */
export const SANDBOX_UID = Number(process.env.KAFKAIQ_SANDBOX_UID ?? 61_000);

let probed: SandboxProbe | null = null;

/** Whether bubblewrap is here and works (user namespaces enabled); tried once per process. */
export function probeSandbox(): SandboxProbe {
  probed ??= probe();
  return probed;
}

function probe(): SandboxProbe {
  if (process.platform !== 'linux') return { ok: false, reason: `the sandbox needs Linux (this is ${process.platform})` };
  const bwrap = ['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap'].find((p) => fs.existsSync(p));
  if (!bwrap) return { ok: false, reason: "bubblewrap is not installed (Debian/Ubuntu: 'sudo apt-get install -y bubblewrap')" };
  const nodeBinary = fs.realpathSync(process.execPath);
  const root = process.getuid?.() === 0;
  const runtime: SandboxRuntime = {
    bwrap,
    nodeBinary,
    libraries: linkedLibraries(nodeBinary),
    hostUid: root ? SANDBOX_UID : process.getuid!(),
    hostGid: root ? SANDBOX_UID : process.getgid!(),
    switchUser: root && spawnSync('setpriv', ['--version']).status === 0,
    insideUid: SANDBOX_UID,
    cgroups: root ? cgroupSupport() : null,
  };
  if (root && !runtime.switchUser) return { ok: false, reason: "setpriv (util-linux) is missing: it runs sandboxed programs under their own uid; install util-linux" };
  // A real start: bwrap, the namespaces and the node binary, as a program will run.
  {
    const argv = bwrapArgs(runtime, { files: [], socketDir: null, hostsFile: null, tmpfsBytes: 1 << 20, argv: [INSIDE.node, '-e', 'process.exit(process.getuid() === ' + SANDBOX_UID + ' ? 0 : 3)'] });
    const launcher = launcherArgv(runtime, [], argv);
    const result = spawnSync(launcher[0]!, launcher.slice(1), { encoding: 'utf8', timeout: 15_000, env: { PATH: '/usr/bin:/bin' } });
    if (result.status !== 0) {
      const why = (result.stderr || result.error?.message || `exit ${result.status ?? result.signal}`).trim().split('\n')[0];
      return { ok: false, reason: `bubblewrap cannot start a sandbox here (${why}); user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone=1)` };
    }
  }
  return { ok: true, runtime };
}

/** The absolute paths `ldd` names for the binary; the usual library folders when ldd is missing. */
function linkedLibraries(binary: string): string[] {
  const out = spawnSync('ldd', [binary], { encoding: 'utf8' });
  if (out.status !== 0) return ['/lib', '/lib64', '/usr/lib'].filter((p) => fs.existsSync(p));
  const libs = new Set<string>();
  for (const line of out.stdout.split('\n')) {
    const m = /(\/\S+)\s+\(0x/.exec(line);
    if (m) libs.add(m[1]!);
  }
  return [...libs];
}

export interface InstanceMounts {
  /** [host file, name under /program]. */
  files: Array<[string, string]>;
  /**
   * A `--cmd` program: the system folders (SYSTEM_ETC, /usr), these host folders read-only at
   * their own paths, its working folder, and its Kafka client settings file.
   */
  command?: { readDirs: string[]; cwd: string; clientConfig: string | null };
  /** The host folder holding the relay's sockets (bound at /relay). */
  socketDir: string | null;
  /** The host file bound at /etc/hosts. */
  hostsFile: string | null;
  tmpfsBytes: number;
  /** What runs inside. */
  argv: string[];
}

export function bwrapArgs(runtime: SandboxRuntime, mounts: InstanceMounts): string[] {
  const args = [
    runtime.bwrap,
    '--unshare-user',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-net',
    '--unshare-cgroup-try',
    '--uid', String(runtime.insideUid),
    '--gid', String(runtime.insideUid),
    '--hostname', 'sandbox',
    '--die-with-parent',
    // No --new-session: the launcher is already a session leader without a terminal (spawned detached).
    '--cap-drop', 'ALL',
    '--proc', '/proc',
    '--dev', '/dev',
    '--size', String(mounts.tmpfsBytes),
    '--tmpfs', INSIDE.tmp,
  ];
  if (!mounts.command) args.push('--chdir', INSIDE.tmp);
  if (mounts.command) {
    // The whole of /usr holds every library the node binary links too.
    args.push('--ro-bind', '/usr', '/usr');
    for (const [target, link] of SYSTEM_LINKS) {
      if (isSymlink(link)) args.push('--symlink', target, link);
      else args.push('--ro-bind-try', link, link); // a system without merged /usr
    }
    for (const etc of SYSTEM_ETC) args.push('--ro-bind-try', etc, etc);
    for (const dir of mounts.command.readDirs) args.push('--ro-bind', dir, dir);
    if (mounts.command.clientConfig) args.push('--ro-bind', mounts.command.clientConfig, INSIDE.clientConfig);
    args.push('--ro-bind', INNER_COMMAND, INSIDE.command);
  } else {
    for (const lib of runtime.libraries) args.push('--ro-bind', lib, lib);
  }
  args.push('--ro-bind', runtime.nodeBinary, INSIDE.node, '--ro-bind', INNER_RELAY, INSIDE.relay);
  for (const [host, name] of mounts.files) args.push('--ro-bind', host, `${INSIDE.program}/${name}`);
  if (mounts.socketDir) args.push('--ro-bind', mounts.socketDir, INSIDE.sockets);
  if (mounts.hostsFile) args.push('--ro-bind', mounts.hostsFile, '/etc/hosts');
  // A command starts in its own folder (the course's root: its jars and lab folders are relative paths).
  if (mounts.command) args.push('--chdir', mounts.command.cwd);
  // The root itself (bwrap's own tmpfs holding the mount points) is read-only too.
  args.push('--remount-ro', '/', '--', ...mounts.argv);
  return args;
}

function isSymlink(p: string): boolean {
  try {
    return fs.lstatSync(p).isSymbolicLink();
  } catch {
    return false; // absent here: nothing to link
  }
}

/**
 * How the sandbox is started from the server. As root: a shell puts itself into the instance's
 * cgroups (so every later process starts inside them), then setpriv drops to the dedicated uid
 * with no groups and a parent-death signal, then bwrap. Otherwise bwrap directly.
 */
export function launcherArgv(runtime: SandboxRuntime, procsFiles: string[], bwrap: string[]): string[] {
  const user = runtime.switchUser
    ? ['setpriv', `--reuid=${runtime.hostUid}`, `--regid=${runtime.hostGid}`, '--clear-groups', '--inh-caps=-all', '--pdeathsig', 'KILL', '--']
    : [];
  if (!procsFiles.length) return [...user, ...bwrap];
  const script = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"';
  return ['/bin/sh', '-c', script, 'sandbox-launcher', ...procsFiles, '--', ...user, ...bwrap];
}
