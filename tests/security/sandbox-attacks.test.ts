/**
 * Issue 14's attacks, each through the workbench's WebSocket against the real server (`npm
 * start`'s entry point, no site build) and the real broker, with the sandbox this machine has.
 * Each test asserts the defence AND that another learner's grade, running at the same time,
 * still passes.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isKafkaAt } from '../../lab-server/broker/probes.ts';
import { STATE_DIR } from '../../lab-server/core/paths.ts';
import { probeSandbox } from '../../lab-server/runner/program/sandbox/bubblewrap.ts';
import { startCourseServer, type CourseServer } from '../support/course-server.ts';
import * as attacks from './attacks.ts';
import { innocentGrade, Learner } from './support.ts';
import { testBrokers } from '../support/brokers.ts';

let server: CourseServer & { pid: number };
const brokers = testBrokers();

beforeAll(async () => {
  // The sandbox is required here: CI installs bubblewrap (.ci/run). No skipping.
  const probe = probeSandbox();
  if (!probe.ok) throw new Error(`These tests need the sandbox: ${probe.reason}`);
  server = await startCourseServer(brokers, 'start');
}, 180_000);

afterAll(async () => {
  await server?.stop();
});

const serverPort = () => Number(new URL(server.url).port);

/** Runs the attack while another learner grades; returns the attack's output and the other's report. */
async function underAttack(attack: (learner: Learner) => Promise<string>) {
  const innocent = innocentGrade(server.url);
  const attacker = await Learner.connect(server.url);
  try {
    const all = await attack(attacker);
    // A Run restarts a program that exits: judge its first run (the later ones repeat it).
    const done = all.indexOf('ATTACK DONE');
    const output = done === -1 ? all : all.slice(0, done + 'ATTACK DONE'.length);
    const report = await innocent;
    // The server is still up and still serves.
    expect(() => process.kill(server.pid, 0)).not.toThrow();
    expect(await isKafkaAt(brokers[0]!)).toBe(true);
    return { output, report };
  } finally {
    attacker.close();
    await innocent.catch(() => {});
  }
}

const runUntilDone = (code: string, lab = 'single-stage', timeoutMs = 60_000) => (learner: Learner) => learner.run(code, /ATTACK DONE|exited on its own/, timeoutMs, lab);

describe('compiling in isolation', () => {
  it.each(Object.entries(attacks.COMPILE_ATTACKS))('refuses %s with the line named, reading nothing', async (_name, attack) => {
    const { output, report } = await underAttack(async (learner) => {
      const graded = await learner.grade(attack.code);
      expect(graded.verdict).toBe('fail');
      expect(graded.message).toMatch(new RegExp(`program\\.ts:${attack.line}:\\d+: .*(refused|not allowed)`));
      return graded.message;
    });
    expect(output).not.toMatch(/root:x:0|kafkaiq-secret|transactionalId/);
    expect(report.verdict).toBe('pass');
  }, 200_000);
});

describe('the sandbox of a running program', () => {
  it('shows none of the host files: no /etc/passwd, no attempt store, no repository', async () => {
    const { output, report } = await underAttack(runUntilDone(attacks.readHostFiles(STATE_DIR)));
    expect(output).not.toContain('ESCAPED');
    expect(output.match(/BLOCKED/g)?.length).toBe(6);
    // The program sees its own env only (no server secrets such as the instructor token).
    const env = /ENV (\S*)/.exec(output)?.[1] ?? '';
    expect(env).toContain('KAFKA_BROKERS');
    expect(env).not.toMatch(/INSTRUCTOR|KAFKAIQ_STATE_DIR|VITEST|npm_/);
    expect(report.verdict).toBe('pass');
  }, 200_000);

  it('sees no other process, so it cannot signal the server', async () => {
    const { output, report } = await underAttack(runUntilDone(attacks.signalParent));
    // In its own pid namespace: bwrap's reaper (pid 1) at most.
    // Its own pid namespace: bwrap's reaper (pid 1), itself and its threads, all numbered from 1.
    const visible = (/VISIBLE (\S*)/.exec(output)?.[1] ?? 'missing').split(',').filter(Boolean).map(Number);
    expect(visible.every((pid) => pid < 100), `visible: ${visible.join(',')}`).toBe(true);
    expect(output).toMatch(/PPID 1\b|BLOCKED ppid/);
    // The server's inspector did not open (it runs with --disable-sigusr1 and got no signal anyway).
    expect(await isListening(9229)).toBe(false);
    expect(report.verdict).toBe('pass');
  }, 200_000);

  it('kill(-1) reaches nothing outside its sandbox', async () => {
    const { output, report } = await underAttack(runUntilDone(attacks.killAll));
    expect(output).toContain('STILL HERE');
    expect(report.verdict).toBe('pass');
  }, 200_000);

  it('reaches only its own endpoints: not the lab server, the controller, the control endpoint, another attempt\'s API or database', async () => {
    // Another learner's attempts that hold an API and a database, whose addresses the attacker learns.
    const spy = await Learner.connect(server.url);
    const spyCode = `console.log('SPY', JSON.stringify(Object.fromEntries(Object.entries(process.env).filter(([, v]) => /^(http|postgres)/.test(v ?? '')))));\nawait new Promise((r) => setTimeout(r, 90_000));\n`;
    const spyDb = await Learner.connect(server.url);
    try {
      spy.send({ type: 'run', lab: 'http-idempotency', code: spyCode });
      spyDb.send({ type: 'run', lab: 'db-sink', code: spyCode });
      const urls = [spy, spyDb].map(async (s) => {
        const line = (await s.until((m) => m.type === 'output' && m.line.startsWith('SPY '), 90_000)) as { line: string };
        return Object.values(JSON.parse(line.line.slice(4)) as Record<string, string>).map((u) => new URL(u));
      });
      const [api, db] = await Promise.all(urls);
      expect(api!.length).toBeGreaterThan(0);
      expect(db!.length).toBeGreaterThan(0);
      const control = JSON.parse(fs.readFileSync(controlFile(), 'utf8')) as { port: number };
      const brokerPort = Number(brokers[0]!.split(':')[1]);
      const targets: Array<[string, string, number]> = [
        ['lab server', '127.0.0.1', serverPort()],
        ['controller', '127.0.0.1', brokerPort + 10_000],
        ['control endpoint', '127.0.0.1', control.port],
        ["another attempt's lab API", api![0]!.hostname, Number(api![0]!.port)],
        ["another attempt's database", db![0]!.hostname, Number(db![0]!.port)],
        ['another host', '10.255.255.1', 80],
        ['ssh', '127.0.0.1', 22],
      ];
      // The attacker runs in a database lab: its own database is relayed, the other one is not.
      const { output, report } = await underAttack(runUntilDone(attacks.connectOutside(targets), 'db-sink'));
      expect(output).not.toContain('ESCAPED');
      expect(output.match(/BLOCKED/g)?.length).toBe(targets.length);
      expect(output).toContain('OWN BROKER REACHABLE');
      expect(report.verdict).toBe('pass');
    } finally {
      spy.send({ type: 'stop' });
      spyDb.send({ type: 'stop' });
      spy.close();
      spyDb.close();
    }
  }, 300_000);

  it('cannot start a process or a worker thread', async () => {
    const { output, report } = await underAttack(runUntilDone(attacks.spawnProcess));
    expect(output).not.toContain('ESCAPED');
    expect(output.match(/BLOCKED/g)?.length).toBe(3);
    expect(report.verdict).toBe('pass');
  }, 200_000);

  it('2 GB of Buffers end that program (its memory cgroup), not the server', async () => {
    const { output, report } = await underAttack(runUntilDone(attacks.allocateBuffers, 'single-stage', 90_000));
    expect(output).not.toContain('ESCAPED');
    const reached = Math.max(0, ...[...output.matchAll(/ALLOCATED (\d+) MB/g)].map((m) => Number(m[1])));
    expect(reached).toBeLessThan(1024);
    expect(output).toMatch(/i1 exited on its own \(signal SIGKILL\)/);
    expect(report.verdict).toBe('pass');
  }, 200_000);

  it('fills only its own size-capped tmpfs; everything else is read-only', async () => {
    const { output, report } = await underAttack(runUntilDone(attacks.fillDisk));
    expect(output).not.toContain('ESCAPED');
    expect(output).toMatch(/BLOCKED fill ENOSPC after (\d+) MB/);
    expect(Number(/after (\d+) MB/.exec(output)?.[1])).toBeLessThanOrEqual(64);
    expect(output.match(/BLOCKED \/(program|etc|x|sandbox)/g)?.length).toBe(4);
    expect(report.verdict).toBe('pass');
  }, 200_000);

  it('200 MB without a newline is cut and capped, and the server stays up', async () => {
    const { output, report } = await underAttack((learner) => learner.run(attacks.hugeLine, /exited on its own/, 120_000));
    expect(output).toMatch(/line cut at/);
    expect(output).toMatch(/stdout is over 64 MB: the rest is discarded/);
    // What reached the learner is bounded (the output cap), far below 200 MB.
    expect(output.length).toBeLessThan(1024 * 1024);
    // And the server never held the line: its peak memory stayed far below 200 MB of text.
    const peakKb = Number(/VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${server.pid}/status`, 'utf8'))?.[1]);
    expect(peakKb).toBeLessThan(700 * 1024);
    expect(report.verdict).toBe('pass');
  }, 200_000);

  it('a flood on the grader channel is dropped, the program and the server carry on', async () => {
    const { output, report } = await underAttack(runUntilDone(attacks.floodChannel));
    expect(output).toContain('ATTACK DONE');
    expect(report.verdict).toBe('pass');
  }, 200_000);
});

function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.on('connect', () => (socket.destroy(), resolve(true)));
    socket.on('error', () => resolve(false));
  });
}

function controlFile(): string {
  const port = Number(brokers[0]!.split(':')[1]);
  return path.join(STATE_DIR, `broker-1n-${port}`, 'control.json');
}
