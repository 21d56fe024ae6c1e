/**
 * A throwaway PostgreSQL server from Debian's binaries for the tests that grade the database labs
 * on a real server (the lab server's DATABASE_URL case). CI installs the package (.ci/run);
 * elsewhere those tests skip when the binaries are missing.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const POSTGRES_MISSING =
  "PostgreSQL's server binaries are missing (/usr/lib/postgresql/<version>/bin/initdb): install Debian's package with 'apt-get install postgresql' (.ci/run does).";

/** The newest /usr/lib/postgresql/<version>/bin with initdb and pg_ctl, or null. */
export function postgresBin(): string | null {
  const root = '/usr/lib/postgresql';
  if (!fs.existsSync(root)) return null;
  const versions = fs.readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) {
    const bin = path.join(root, v, 'bin');
    if (fs.existsSync(path.join(bin, 'initdb')) && fs.existsSync(path.join(bin, 'pg_ctl'))) return bin;
  }
  return null;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/**
 * A throwaway PostgreSQL: initdb (trust authentication, superuser "postgres") into a temp dir,
 * started with pg_ctl on a free port and a socket dir of its own. PostgreSQL refuses to run as
 * root: as root, every command runs as the "postgres" user (the Debian package creates it).
 */
export class ThrowawayPostgres {
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-pg-'));
  port = 0;
  private started = false;

  constructor(private readonly bin: string) {}

  get url(): string {
    return `postgresql://postgres@127.0.0.1:${this.port}/postgres`;
  }

  private run(tool: string, args: string[]): string {
    const asRoot = process.getuid?.() === 0;
    const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', path.join(this.bin, tool), ...args]] : [path.join(this.bin, tool), args];
    const result = spawnSync(cmd, argv, { encoding: 'utf8', cwd: this.dir });
    if (result.status !== 0) throw new Error(`${tool} failed (${result.status}): ${(result.stderr || result.stdout).trim().split('\n').slice(-3).join(' ')}`);
    return result.stdout;
  }

  async start(): Promise<void> {
    if (process.getuid?.() === 0) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
      fs.chownSync(this.dir, uid, gid);
    }
    this.port = await freePort();
    const data = path.join(this.dir, 'data');
    this.run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=50 -c track_commit_timestamp=on`;
    this.run('pg_ctl', ['-D', data, '-o', options, '-l', path.join(this.dir, 'server.log'), '-w', '-t', '60', 'start']);
    this.started = true;
    // Whatever happens to this test process, the server does not outlive it.
    process.once('exit', () => this.stopNow());
  }

  stopNow(): void {
    if (!this.started) return;
    this.started = false;
    try {
      this.run('pg_ctl', ['-D', path.join(this.dir, 'data'), '-m', 'immediate', '-w', 'stop']);
    } catch {
      // Already gone.
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
