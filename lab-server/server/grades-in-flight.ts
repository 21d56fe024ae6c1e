/**
 * Grades under way, as the shared attempt store knows them. Each lab server records the grades it
 * runs and touches them every few seconds; a server that dies (killed, its machine gone) stops
 * touching them. When that learner next says hello, on whichever server, a grade untouched for
 * ABANDONED_AFTER_MS becomes an attempt with the verdict `error` and a message saying why, so the
 * learner sees what happened instead of a grade that never ends.
 */
import os from 'node:os';
import { REPORT_VERSION, type GradeReport } from '../../src/shared/report.ts';
import { describeError } from '../../src/shared/errors.ts';
import { bestEffort } from '../core/best-effort.ts';
import type { AttemptStore } from './attempt-store.ts';

/** How often a server touches its grades. */
export const GRADE_HEARTBEAT_MS = 5_000;
/** Untouched this long, a grade's server is gone. */
export const ABANDONED_AFTER_MS = 4 * GRADE_HEARTBEAT_MS;

/** A grade under way, as kept in the store. */
export interface GradeInFlight {
  id: number;
  lab: string;
  quick: boolean;
  seed: number | null;
  server: string;
  startedAt: string;
}

/** The report of a grade whose server stopped before it finished. */
export function abandonedGradeReport(grade: GradeInFlight): GradeReport {
  return {
    version: REPORT_VERSION,
    lab: grade.lab,
    verdict: 'error',
    message: `The lab server grading this (${grade.server}) stopped before the grade finished; this is not your program's fault: grade again.`,
    seed: grade.seed ?? 0,
    quick: grade.quick,
    startedAt: grade.startedAt,
    checks: [],
    faults: [],
    timeline: [],
    stats: { inputs: 0, abortedInputs: 0, outputs: 0, abortedRecords: 0, restarts: 0, selfExits: 0, durationMs: 0 },
  };
}

/** This server's grades under way, touched every GRADE_HEARTBEAT_MS while any runs. */
export class ServerGrades {
  readonly server = `${os.hostname()}/${process.pid}`;
  private readonly running = new Set<number>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly store: Pick<AttemptStore, 'gradeStarted' | 'gradesAlive' | 'gradeEnded'>,
    private readonly log: (line: string) => void,
  ) {}

  /** Records the grade; null when the store could not (the grade runs all the same, unrecorded). */
  async start(sessionId: string, grade: { lab: string; quick: boolean; seed: number | null }): Promise<number | null> {
    let id: number;
    try {
      id = await this.store.gradeStarted(sessionId, { ...grade, server: this.server, startedAt: new Date().toISOString() });
    } catch (err) {
      this.log(`could not record a grade under way: ${describeError(err)}`);
      return null;
    }
    this.running.add(id);
    this.timer ??= setInterval(() => void bestEffort('touch the grades under way', () => this.store.gradesAlive([...this.running]), this.log), GRADE_HEARTBEAT_MS).unref();
    return id;
  }

  async end(id: number | null): Promise<void> {
    if (id === null) return;
    this.running.delete(id);
    if (this.running.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
    await bestEffort('forget a finished grade', () => this.store.gradeEnded(id), this.log);
  }
}
