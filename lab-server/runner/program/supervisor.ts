/**
 * The supervisor of a program's instances, as systemd or Kubernetes would run them: numbered
 * slots, each with its current incarnation; a program that exits on its own is restarted under a
 * restart policy; exits the grader caused itself are expected; a zombie (a frozen incarnation that
 * was replaced) stays tracked until it is gone; and each instance's consumer-group memberships are
 * remembered, so the grader can send the LeaveGroup a killed one could not.
 */
import type { ChildEvent } from './child/protocol.ts';
import { ProgramInstance, type ProgramProcess, type ProgramSource } from './program-instance.ts';

export interface Slot {
  slot: number;
  current: ProgramProcess;
  incarnation: number;
  txnOpen: boolean;
  /** The instrumented call the current instance is inside (a before: point reported, no after: or failure yet), if any. */
  callInFlight: string | null;
  restartsInARow: number;
}

/** What to do when a slot's current instance exits on its own: restart after delayMs, or not (null). */
export type RestartPolicy = (slot: Slot, code: number | null, signal: NodeJS.Signals | null) => { delayMs: number } | null;

export interface SupervisorHooks {
  /** The env of the program in this slot. */
  env(slot: number): Record<string, string>;
  /** The instance id of a slot ('i1', ...; a throughput lane names its own). */
  instanceId?(slot: number): string;
  line(instance: ProgramProcess, stream: 'stdout' | 'stderr', line: string): void;
  /** An IPC event of an instrumented program (after the supervisor noted group memberships). */
  event?(slot: Slot, instance: ProgramProcess, event: ChildEvent): void;
  started?(slot: Slot, restarted: boolean): void;
  /** Every exit, expected or not, before the restart policy is asked. */
  exited?(instance: ProgramProcess, code: number | null, signal: NodeJS.Signals | null): void;
  /**
   * An exit the program made on its own, with the group memberships it last had: a process that
   * crashed, or lost its broker during a restart, left no LeaveGroup behind.
   */
  exitedOnItsOwn?(instance: ProgramProcess, memberships: ReadonlyMap<string, string>): void;
  /** The attempt winds down: no more restarts. */
  stopping?(): boolean;
  /**
   * Whether a consumer group is one the attempt was granted: the program's 'member' events name
   * groups the grader may later send LeaveGroup for, so any other group is ignored. Unset: none is.
   */
  ownsGroup?(groupId: string): boolean;
  /** Something an instance list shows changed (a start, an exit). */
  changed?(): void;
}

export const MAX_SELF_RESTARTS = 15;
/** Group memberships remembered per instance: a program has a few consumers, never more. */
export const MAX_MEMBERSHIPS = 8;

/** The workbench's and the grader's policy: restart with a growing delay; stop after a crash loop. */
export function supervisorPolicy(system: (line: string) => void): RestartPolicy {
  return (slot, code, signal) => {
    const id = slot.current.id;
    // A clean exit (code 0) is a program that finished its input, e.g. Kafka's copier: not a crash loop.
    if (code !== 0 || signal) slot.restartsInARow++;
    const reason = signal === 'SIGXCPU' ? 'its CPU-time limit' : signal ? `signal ${signal}` : `code ${code}`;
    if (slot.restartsInARow > MAX_SELF_RESTARTS) {
      system(`${id} exited (${reason}) ${MAX_SELF_RESTARTS} times in a row; no more restarts.`);
      return null;
    }
    const delayMs = Math.min(2_000, 250 * Math.max(1, slot.restartsInARow));
    system(`${id} exited on its own (${reason}); restarting it in ${(delayMs / 1000).toFixed(1)} s, like a supervisor would.`);
    return { delayMs };
  };
}

export class Supervisor {
  readonly slots = new Map<number, Slot>();
  readonly zombies = new Set<ProgramProcess>();
  /**
   * The consumer-group memberships each instance last reported (group id -> member id): only the
   * attempt's own groups (hooks.ownsGroup), one member per group, at most MAX_MEMBERSHIPS groups.
   */
  readonly members = new WeakMap<ProgramProcess, Map<string, string>>();
  private readonly expectedExits = new WeakSet<ProgramProcess>();
  /** Incarnations started after the first of their slot. */
  restarts = 0;
  /** Exits the program made on its own (not the grader's doing). */
  selfExits = 0;
  /** When the last of those exits happened (epoch ms). */
  lastSelfExitAt = 0;
  private stopped = false;
  /** Slots whose program exited on its own too often in a row: the policy restarts them no more. */
  private readonly gaveUpSlots = new Set<number>();
  /** Set once the attempt winds down (stopAll, or the attempt's own flag): no more restarts. */
  get stopping(): boolean {
    return this.stopped || !!this.hooks.stopping?.();
  }

  /** Restarts scheduled but not yet made. */
  private pending = 0;

  constructor(
    /** The compiled program (asked at each start: the supervisor exists before the program is compiled). */
    private readonly source: () => ProgramSource,
    private readonly hooks: SupervisorHooks,
    private readonly policy: RestartPolicy,
  ) {}

  /** Starts (or restarts) the slot's program: a new incarnation with the same identity. */
  start(slotNumber: number): Slot {
    const previous = this.slots.get(slotNumber);
    // One live incarnation per slot (a zombie aside): an earlier one still running here (it exited
    // and was restarted by the supervisor path while a fault was armed on it, say) would be a second
    // copy with the same identity that no fault targets and nobody stops. Kafka's copier, which
    // exits whenever it reaches its launch-time end, hit this and raced copies of itself.
    const stale = previous?.current;
    if (stale?.alive && !this.zombies.has(stale)) {
      this.expectedExits.add(stale);
      stale.signal('SIGKILL');
    }
    this.gaveUpSlots.delete(slotNumber);
    const incarnation = (previous?.incarnation ?? 0) + 1;
    const id = this.hooks.instanceId?.(slotNumber) ?? `i${slotNumber}`;
    const instance = new ProgramInstance(id, incarnation, this.source(), this.hooks.env(slotNumber));
    const slot: Slot = { slot: slotNumber, current: instance, incarnation, txnOpen: false, callInFlight: null, restartsInARow: previous?.restartsInARow ?? 0 };
    this.slots.set(slotNumber, slot);
    if (previous) this.restarts++;
    this.hooks.started?.(slot, !!previous);
    instance.on('line', (stream, line) => this.hooks.line(instance, stream, line));
    instance.on('event', (event) => {
      if (event.t === 'member') {
        this.remember(instance, event.groupId, event.memberId);
        return;
      }
      this.hooks.event?.(slot, instance, event);
    });
    instance.on('exit', (code, signal) => this.onExit(slot, instance, code, signal));
    this.hooks.changed?.();
    return slot;
  }

  /** Notes a membership the program reported, if the group is the attempt's own and the bound allows. */
  private remember(instance: ProgramProcess, groupId: string, memberId: string): void {
    if (!this.hooks.ownsGroup?.(groupId)) return;
    const groups = this.members.get(instance) ?? new Map<string, string>();
    if (!groups.has(groupId) && groups.size >= MAX_MEMBERSHIPS) return;
    groups.set(groupId, memberId);
    this.members.set(instance, groups);
  }

  /** The grader is about to end this instance itself: its exit is no crash to restart. */
  expectExit(instance: ProgramProcess): void {
    this.expectedExits.add(instance);
  }

  slot(n: number): Slot | undefined {
    return this.slots.get(n);
  }

  get first(): Slot | undefined {
    return this.slots.get(1);
  }

  /** The lowest slot number not in use. */
  get nextSlot(): number {
    return Math.max(0, ...this.slots.keys()) + 1;
  }

  /** Every live process: the slots' current instances and the zombies. */
  live(): ProgramProcess[] {
    return [...[...this.slots.values()].map((s) => s.current), ...this.zombies].filter((i) => i.alive);
  }

  /** Whether a slot's program runs or is about to be restarted. */
  get running(): boolean {
    return !this.stopping && (this.live().length > 0 || this.pending > 0);
  }

  /**
   * Every slot's program exited on its own too often in a row and is restarted no more, and no
   * zombie is left: nothing of the program runs, or will unless the grader starts it again.
   */
  get gaveUp(): boolean {
    return this.slots.size > 0 && [...this.slots.keys()].every((n) => this.gaveUpSlots.has(n)) && this.live().length === 0;
  }

  /** Progress was made: a crash loop is broken. */
  resetRestartCounts(): void {
    for (const slot of this.slots.values()) slot.restartsInARow = 0;
  }

  /** For the workbench's instance list: every slot's current instance, and the zombies. */
  instances(): { id: string; state: ProgramProcess['state']; incarnation: number }[] {
    const list = [...this.slots.values()].map((s) => ({ id: s.current.id, state: s.current.state, incarnation: s.incarnation }));
    for (const z of this.zombies) list.push({ id: `${z.id}-zombie`, state: z.state, incarnation: z.incarnation });
    return list;
  }

  /** Stops every live process (SIGTERM, SIGKILL after the grace); no restarts from here on. */
  async stopAll(graceMs: number): Promise<void> {
    this.stopped = true;
    await Promise.all(this.live().map((i) => i.stop(graceMs)));
  }

  /** SIGKILLs every live process at once (nothing to tidy up); no restarts from here on. */
  async killAll(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.live().map((i) => i.kill()));
  }

  private onExit(slot: Slot, instance: ProgramProcess, code: number | null, signal: NodeJS.Signals | null): void {
    this.hooks.exited?.(instance, code, signal);
    this.hooks.changed?.();
    if (this.stopping || this.expectedExits.has(instance) || this.zombies.has(instance) || slot.current !== instance) return;
    // A program that exits on its own is restarted, as a supervisor (systemd, Kubernetes) would.
    this.selfExits++;
    this.lastSelfExitAt = Date.now();
    this.hooks.exitedOnItsOwn?.(instance, this.members.get(instance) ?? new Map());
    const restart = this.policy(slot, code, signal);
    if (!restart) {
      this.gaveUpSlots.add(slot.slot);
      this.hooks.changed?.();
      return;
    }
    this.pending++;
    setTimeout(() => {
      this.pending--;
      // Slot records are replaced on every start: compare with the slot's current record, or a
      // fault that restarted the slot meanwhile would get a second, untracked incarnation.
      if (!this.stopping && this.slots.get(slot.slot)?.current === instance) this.start(slot.slot);
    }, restart.delayMs).unref();
  }
}
