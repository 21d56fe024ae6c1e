/**
 * Broker restarts are global: every attempt on the broker sees them. Attempts hold a shared
 * lease while the grader itself talks to Kafka (seeding, verifying), and a restart takes the
 * lease exclusively, so a restart injected by one attempt never corrupts another's bookkeeping.
 * The learners' programs still see every restart, as they would in production.
 */
export class MaintenanceLock {
  private recovering: Promise<void> | null = null;
  private shared = 0;
  private exclusive: Promise<void> | null = null;
  private waiters: Array<() => void> = [];

  async withShared<T>(fn: () => Promise<T>): Promise<T> {
    while (this.exclusive) await this.exclusive;
    return this.continueShared(fn);
  }

  /**
   * A shared lease taken at once, for work begun inside withShared that outlives it: a seeding
   * transaction held open for seconds must not span a broker restart (its EndTxn would meet a
   * coordinator still loading). Only call it while holding a shared lease: an exclusive section
   * may be waiting, and it waits for this one too.
   */
  async continueShared<T>(fn: () => Promise<T>): Promise<T> {
    this.shared++;
    try {
      return await fn();
    } finally {
      this.shared--;
      if (this.shared === 0) for (const wake of this.waiters.splice(0)) wake();
    }
  }

  /**
   * A node killed by a fault comes back in the background while the attempts go on with the
   * others (min.insync.replicas 2 of 3 keeps them writing). Whatever needs every node (creating
   * topics with replication factor 3, the next node kill, a restart) waits for it with whenWhole().
   */
  recover(start: Promise<void>): void {
    const recovering: Promise<void> = start.finally(() => {
      if (this.recovering !== recovering) return;
      this.recovering = null;
      this.lastRecoveryEndedAt = Date.now();
    });
    this.recovering = recovering;
    recovering.catch(() => {}); // reported by whoever awaits whenWhole()
  }

  /**
   * A shared lease on a whole cluster, for set-up that talks to every node: no other grade can
   * kill a node meanwhile (a kill is exclusive), and inside the lease whenWhole waits for a node an
   * earlier kill took down (its restart takes no lease, so this cannot deadlock). Waiting outside
   * the lease let a kill land between the wait and the requests: ECONNREFUSED while preparing.
   */
  withSharedWhole<T>(fn: () => Promise<T>): Promise<T> {
    return this.withShared(async () => {
      await this.whenWhole();
      return fn();
    });
  }

  /** True while a killed node comes back in the background (recover): the cluster is not whole. */
  get isRecovering(): boolean {
    return this.recovering !== null;
  }

  /** When the last background recovery ended (the node back and in sync, or given up on). */
  lastRecoveryEndedAt = 0;

  /** Resolves once no node is coming back; rejects if the last node start failed. */
  async whenWhole(): Promise<void> {
    while (this.recovering) await this.recovering;
  }

  /**
   * Total time spent inside exclusive sections (broker restarts, killed coordinators), and when the
   * last one ended. Grades on this cluster do not count that time against a program's limit or its
   * quiet window: on a busy machine a restart can take a minute, and the program is not to blame.
   */
  downtimeMs = 0;
  lastDowntimeEndedAt = 0;
  /** When the last exclusive section began (the broker went down). */
  lastDowntimeBeganAt = 0;

  /** True while an exclusive section runs (a broker restart in progress). */
  get isDown(): boolean {
    return this.exclusive !== null;
  }

  async withExclusive<T>(fn: () => Promise<T>): Promise<T> {
    while (this.exclusive) await this.exclusive;
    let release: () => void = () => {};
    this.exclusive = new Promise<void>((resolve) => (release = resolve));
    let began = 0;
    try {
      while (this.shared > 0) await new Promise<void>((resolve) => this.waiters.push(resolve));
      began = this.lastDowntimeBeganAt = Date.now();
      return await fn();
    } finally {
      if (began) {
        this.downtimeMs += Date.now() - began;
        this.lastDowntimeEndedAt = Date.now();
      }
      this.exclusive = null;
      release();
    }
  }
}

const lockByCluster = new Map<string, MaintenanceLock>();

/**
 * The lock of one cluster (by its bootstrap list), one per process: attempts in one process share
 * it. A node killed on the 3-node cluster of a failover lab must not hold up the grades running
 * on the single broker, and vice versa.
 */
export function maintenanceFor(brokers: readonly string[]): MaintenanceLock {
  const key = [...brokers].sort().join(',');
  let lock = lockByCluster.get(key);
  if (!lock) {
    lock = new MaintenanceLock();
    lockByCluster.set(key, lock);
  }
  return lock;
}
