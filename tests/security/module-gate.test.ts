/**
 * Issue 27, class 8: builtins the compile step refuses are refused at run time too, whatever way a
 * program asks for them (tests/security/attacks/load-refused-builtins.ts: a computed import() of
 * node:sqlite, process.getBuiltinModule, require through createRequire, Module._load, a data:
 * module, a resolve hook of its own). Run here with the sandbox this machine has (bubblewrap in
 * CI); module-gate-unsandboxed.test.ts runs the same program without it. Beside it, another
 * learner's quick grade passes.
 */
import { describe, expect, it } from 'vitest';
import { innocentGrade, runAttack } from './tenancy-support.ts';
import { expectEveryWayRefused } from './module-gate-support.ts';
import { testBrokers } from '../support/brokers.ts';

const brokers = testBrokers();

describe('the run-time module gate, sandboxed', () => {
  it('refuses node:sqlite, v8 and vm however they are loaded, and a hook in front of it', async () => {
    const victim = await innocentGrade(brokers);
    const attack = await runAttack(brokers, 'load-refused-builtins', victim.namespace);
    expectEveryWayRefused(attack);
    const report = await victim.report;
    expect(report.verdict, report.message).toBe('pass');
  }, 180_000);
});
