/**
 * A test double of LabSessionApi for PROTOCOL tests only: it behaves like a session from the
 * outside (streams output, holds a run until stopped, answers a grade with a report) without a
 * broker. End-to-end tests must use the real createLabSession.
 */
import type { LabSessionApi, SessionListener } from '../../lab-server/runner/contract.ts';
import { KafkaIqError } from '../../src/shared/errors.ts';
import type { InspectResult } from '../../src/shared/messages.ts';
import { REPORT_VERSION, type GradeReport } from '../../src/shared/report.ts';

export const FAKE_LABS = ['single-stage', 'fan-out'];

export function fakeReport(lab: string, overrides: Partial<GradeReport> = {}): GradeReport {
  return {
    version: REPORT_VERSION,
    lab,
    verdict: 'pass',
    message: 'Every check held; 2 faults hit open transactions',
    seed: 42,
    quick: false,
    startedAt: new Date(0).toISOString(),
    checks: [
      { name: 'no-loss', passed: true, summary: '120 of 120 inputs have outputs', evidence: [] },
      { name: 'no-duplicates', passed: true, summary: 'no key/value appears twice', evidence: ['out-0@17 k3 v17 (after kill of i1)'] },
    ],
    faults: [{ atMs: 1200, kind: 'kill', instance: 'i1', crashPoint: 'before:commit', inTransaction: true }],
    timeline: [
      { atMs: 0, kind: 'start', instance: 'i1' },
      { atMs: 800, kind: 'commit', instance: 'i1' },
      { atMs: 1200, kind: 'fault', instance: 'i1', detail: 'kill' },
      { atMs: 1300, kind: 'abort', instance: 'i1' },
    ],
    stats: { inputs: 120, abortedInputs: 30, outputs: 120, abortedRecords: 4, restarts: 1, selfExits: 0, durationMs: 4321 },
    ...overrides,
  };
}

export interface FakeSessionHandle {
  sessionId: string;
  disposed: boolean;
}

/** Returns the factory and the sessions it made, so tests can see what happened to them. */
export function fakeSessionFactory(options: { gradeDelayMs?: number } = {}) {
  const sessions: FakeSessionHandle[] = [];
  const createSession = ({ sessionId, listener }: { sessionId: string; listener: SessionListener }): LabSessionApi => {
    const handle: FakeSessionHandle = { sessionId, disposed: false };
    sessions.push(handle);
    let stopRun: (() => void) | null = null;
    const knownLab = (lab: string) => {
      if (!FAKE_LABS.includes(lab)) throw new KafkaIqError('LAB_NOT_FOUND', `No lab "${lab}": known labs are ${FAKE_LABS.join(', ')}`);
    };
    const api: LabSessionApi = {
      async run(lab) {
        knownLab(lab);
        listener.state({ activity: 'running', lab, instances: [{ id: 'i1', state: 'running', incarnation: 1 }], topics: { INPUT_TOPIC: `kiq-${sessionId}-input` } });
        listener.output('i1', 'stdout', 'started');
        await new Promise<void>((resolve) => (stopRun = resolve));
        listener.state({ activity: 'idle', lab, instances: [], topics: {} });
      },
      async grade(lab, _code, { quick, seed }) {
        knownLab(lab);
        listener.progress({ mode: quick ? 'quick' : 'grade', phase: 'running', processed: 10, expected: 120, elapsedMs: 100, limitMs: 90_000, faultsDone: 0, faultsPlanned: 2 });
        await new Promise((resolve) => setTimeout(resolve, options.gradeDelayMs ?? 20));
        return fakeReport(lab, { quick, seed: seed ?? 42 });
      },
      async stop() {
        stopRun?.();
        stopRun = null;
      },
      async fault() {},
      async inspect(command): Promise<InspectResult> {
        if (command.what === 'topics') return { what: 'topics', topics: [{ name: `kiq-${sessionId}-input`, env: 'INPUT_TOPIC', partitions: 3 }] };
        if (command.what === 'txns') return { what: 'txns', transactions: [] };
        if (command.what === 'offsets') return { what: 'offsets', topic: command.topic, partitions: [] };
        if (command.what === 'sql') return { what: 'sql', columns: ['id', 'value'], rows: [['k1', 'v1']], truncated: false };
        return { what: 'consume', topic: command.topic, isolation: command.isolation, records: [], truncated: false };
      },
      async dispose() {
        await api.stop();
        handle.disposed = true;
      },
    };
    return api;
  };
  return { createSession, sessions };
}
