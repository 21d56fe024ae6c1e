/**
 * A fake program driver and fake program processes, for the nemesis unit tests: what a fault
 * handler does to the program (signals, arming, restarts) is recorded instead of done, so every
 * handler is tested without Kafka and without a learner program.
 */
import { EventEmitter } from 'node:events';
import type { FaultRecord } from '../../src/shared/report.ts';
import type { ArmAction, ChildEvent, RunnerCommand } from '../../lab-server/runner/program/child/protocol.ts';
import type { AimedHit, DriverContext, ProgramDriver } from '../../lab-server/runner/driver/contract.ts';
import type { PlannedFault } from '../../lab-server/runner/fault-plan.ts';
import type { InstanceState, ProgramProcess, ProgramSource } from '../../lab-server/runner/program/program-instance.ts';
import type { SeedTransaction } from '../../lab-server/runner/seeder.ts';
import type { Slot } from '../../lab-server/runner/program/supervisor.ts';

/** A process that records what was done to it; SIGKILL, SIGTERM and stop() make it exit. */
export class FakeProcess extends EventEmitter implements ProgramProcess {
  state: InstanceState = 'running';
  readonly done: string[] = [];
  readonly sent: RunnerCommand[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private exit!: (value: { code: number | null; signal: NodeJS.Signals | null }) => void;
  /** Set: resume() makes it exit (a zombie that finds itself fenced). */
  exitOnResume = false;
  /** What the program reports over its channel as it resumes, before any exit (a fenced call, say). */
  eventsOnResume: ChildEvent[] = [];

  constructor(
    readonly id: string,
    readonly incarnation: number,
  ) {
    super();
    this.exited = new Promise((resolve) => (this.exit = resolve));
  }

  get alive(): boolean {
    return this.state !== 'exited';
  }

  send(command: RunnerCommand): void {
    this.sent.push(command);
  }

  signal(signal: NodeJS.Signals): void {
    this.done.push(signal);
    if (signal === 'SIGKILL' || signal === 'SIGTERM') this.die(signal);
  }

  pause(): void {
    this.done.push('pause');
    this.state = 'paused';
  }

  resume(): void {
    this.done.push('resume');
    this.state = 'running';
    for (const event of this.eventsOnResume) this.report(event);
    if (this.exitOnResume) this.die('SIGTERM');
  }

  async stop(): Promise<void> {
    this.done.push('stop');
    this.die('SIGTERM');
  }

  async kill(): Promise<void> {
    this.signal('SIGKILL');
  }

  /** The program reports an IPC event (as the kafkajs wrapper would). */
  report(event: ChildEvent): void {
    this.emit('event', event);
  }

  private die(signal: NodeJS.Signals): void {
    if (!this.alive) return;
    this.state = 'exited';
    this.emit('exit', null, signal);
    this.exit({ code: null, signal });
  }
}

/** A driver that reaches the crash point at once (or never), and says what it was asked. */
export class FakeDriver implements ProgramDriver {
  readonly kind = 'instrumented';
  readonly source: ProgramSource = { kind: 'bundle', file: 'fake.mjs', readDirs: [], writeDir: '/tmp' };
  readonly limitFactor = 1;
  readonly armed: { instance: string; action: ArmAction; point?: string }[] = [];
  /** What armAndWrite answers: a hit at the fault's crash point (txnOpen as given), or none. */
  hit: { txnOpen: boolean } | null = { txnOpen: true };
  /** What openTransactionNow / anyTransactionOpen answer. */
  open: boolean | null = true;

  aims(): boolean {
    return true;
  }

  quietMs(base: number): number {
    return base;
  }

  async armAndWrite(ctx: DriverContext, slot: Slot, fault: PlannedFault, action: ArmAction, wave: SeedTransaction[]) {
    this.armed.push({ instance: slot.current.id, action, ...(fault.crashPoint ? { point: fault.crashPoint } : {}) });
    await ctx.input.writeWave(wave);
    const event: AimedHit | null =
      this.hit && fault.crashPoint ? { t: 'hit', point: fault.crashPoint, action, txnOpen: this.hit.txnOpen, ...(fault.topic ? { aimedAt: fault.topic } : {}) } : null;
    return { instance: slot.current, event };
  }

  async openTransactionNow(): Promise<boolean | null> {
    return this.open;
  }

  async anyTransactionOpen(): Promise<boolean | null> {
    return this.open;
  }

  async waitForEvent(): Promise<boolean> {
    return true;
  }

  async awaitReplacementCommit(): Promise<void> {}

  hitTransaction(faults: readonly FaultRecord[]): boolean {
    return faults.some((f) => f.inTransaction === true);
  }
}
