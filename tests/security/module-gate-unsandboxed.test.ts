/**
 * Issue 27, class 8, without the sandbox (KAFKAIQ_SANDBOX=off, a learner's own machine): Node's
 * permission model does not gate node:sqlite, so the module gate alone must refuse it. Same attack
 * as module-gate.test.ts; beside it, another learner's quick grade passes.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { sandboxPolicy } from '../../lab-server/runner/program/sandbox/policy.ts';
import { innocentGrade, runAttack } from './tenancy-support.ts';
import { expectEveryWayRefused } from './module-gate-support.ts';

const brokers = inject('brokers');
const previous = process.env.KAFKAIQ_SANDBOX;

beforeAll(() => {
  // Decided once per process, on first use: this file's first use is here.
  process.env.KAFKAIQ_SANDBOX = 'off';
  expect(sandboxPolicy().sandboxed).toBe(false);
});

afterAll(() => {
  if (previous === undefined) delete process.env.KAFKAIQ_SANDBOX;
  else process.env.KAFKAIQ_SANDBOX = previous;
});

describe('the run-time module gate, unsandboxed', () => {
  it('refuses node:sqlite, v8 and vm however they are loaded, and a hook in front of it', async () => {
    const victim = await innocentGrade(brokers);
    const attack = await runAttack(brokers, 'load-refused-builtins', victim.namespace);
    expectEveryWayRefused(attack);
    const report = await victim.report;
    expect(report.verdict, report.message).toBe('pass');
  }, 180_000);
});
