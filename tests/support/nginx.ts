/**
 * A real load balancer for the multi-server tests: Debian's nginx (installed by .ci/run), run in
 * the foreground by the test with a configuration of its own, proxying HTTP and the WebSocket to
 * several lab servers. Which server answers is decided by the `via` query parameter (a consistent
 * hash), so a test can send a learner to one server and then to another; the chosen upstream is
 * named in the X-KafkaIQ-Upstream response header.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const NGINX_MISSING = "nginx is missing: install Debian's package with 'apt-get install nginx' (.ci/run does).";

export function nginxBinary(): string | null {
  return ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => fs.existsSync(p)) ?? null;
}

export async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

export class Nginx {
  private readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-nginx-'));
  private child: ChildProcess | null = null;

  constructor(
    private readonly binary: string,
    readonly port: number,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Starts nginx in front of the given upstream ports and waits until it answers. */
  async start(upstreams: number[]): Promise<void> {
    const d = this.dir;
    const conf = `
daemon off;
master_process off;
worker_processes 1;
pid ${d}/nginx.pid;
error_log ${d}/error.log warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path ${d}/body; proxy_temp_path ${d}/proxy; fastcgi_temp_path ${d}/fastcgi; uwsgi_temp_path ${d}/uwsgi; scgi_temp_path ${d}/scgi;
  map $http_upgrade $connection_upgrade { default upgrade; '' close; }
  upstream kafkaiq {
    hash $arg_via consistent;
${upstreams.map((p) => `    server 127.0.0.1:${p} max_fails=1 fail_timeout=60s;`).join('\n')}
  }
  server {
    listen 127.0.0.1:${this.port};
    location / {
      proxy_pass http://kafkaiq;
      proxy_http_version 1.1;
      proxy_set_header Host $http_host;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_read_timeout 600s;
      proxy_next_upstream error timeout http_502;
      add_header X-KafkaIQ-Upstream $upstream_addr always;
    }
  }
}
`;
    fs.writeFileSync(path.join(d, 'nginx.conf'), conf);
    const check = spawnSync(this.binary, ['-t', '-p', d, '-c', path.join(d, 'nginx.conf')], { encoding: 'utf8' });
    if (check.status !== 0) throw new Error(`nginx refused its configuration: ${check.stderr.trim()}`);
    const child = spawn(this.binary, ['-p', d, '-c', path.join(d, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
    this.child = child;
    process.once('exit', () => child.kill('SIGKILL'));
    for (let i = 0; i < 100; i++) {
      if (child.exitCode !== null) throw new Error(`nginx exited (${child.exitCode}): ${fs.readFileSync(path.join(d, 'error.log'), 'utf8').slice(-500)}`);
      const up = await new Promise<boolean>((resolve) => {
        const socket = net.connect(this.port, '127.0.0.1', () => {
          socket.destroy();
          resolve(true);
        });
        socket.on('error', () => resolve(false));
      });
      if (up) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('nginx did not listen within 5 s');
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
