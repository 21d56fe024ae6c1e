/**
 * The broker control endpoint (restart, kill node) takes requests with its token only, and a
 * learner program can read neither the token nor the file it is in. A grade runs meanwhile in
 * another namespace and passes (no broker restart happened).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BrokerProcess } from '../../lab-server/broker/broker-process.ts';
import { probeSandbox } from '../../lab-server/runner/program/sandbox/bubblewrap.ts';
import { innocentGrade, runAttack } from './tenancy-support.ts';
import { testBrokers } from '../support/brokers.ts';

const brokers = testBrokers();

function controlFile(): string {
  const port = Number(brokers[0]!.split(':')[1]);
  return path.join(new BrokerProcess({ basePort: port }).dataDir, 'control.json');
}

describe('the broker control endpoint', () => {
  it('is a 0600 file, and refuses a request without the token', async () => {
    const file = controlFile();
    expect(fs.statSync(file).mode & 0o077).toBe(0);
    const { port, token } = JSON.parse(fs.readFileSync(file, 'utf8'));
    expect((await fetch(`http://127.0.0.1:${port}/restart`, { method: 'POST' })).status).toBe(401);
    expect((await fetch(`http://127.0.0.1:${port}/restart`, { method: 'POST', headers: { authorization: 'Bearer x' + token } })).status).toBe(401);
    // The right token gets past the check (an unknown route, so nothing restarts).
    expect((await fetch(`http://127.0.0.1:${port}/nothing`, { method: 'POST', headers: { authorization: `Bearer ${token}` } })).status).toBe(404);
  });

  it('cannot be called by a learner program, and a concurrent grade passes', async () => {
    const file = controlFile();
    const { port } = JSON.parse(fs.readFileSync(file, 'utf8'));
    const victim = await innocentGrade(brokers);
    const result = await runAttack(brokers, 'call-control-endpoint', victim.namespace, { __CONTROL_FILE__: file, __CONTROL_PORT__: String(port) });
    expect(result.allowed, result.refusal).toBe(false);
    // Node's permission model refuses the read, sandboxed or not.
    expect(result.refusal).toMatch(/read: ERR_ACCESS_DENIED/);
    // In the sandbox the endpoint's port is out of reach (its network carries only the lab's
    // endpoints); unsandboxed (loopback only) the endpoint refuses a request without the token.
    expect(result.refusal).toMatch(probeSandbox().ok ? /post: unreachable \(ECONNREFUSED\)/ : /post: HTTP 401/);
    const report = await victim.report;
    expect(report.verdict, report.message).toBe('pass');
  }, 120_000);
});
