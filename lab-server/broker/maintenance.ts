/**
 * Broker restarts are global: every attempt on the broker sees them. Attempts hold a shared
 * lease while the grader itself talks to Kafka (seeding, verifying), and a restart takes the
 * lease exclusively, so a restart injected by one attempt never corrupts another's bookkeeping.
 * The learners' programs still see every restart, as they would in production.
 */
export class MaintenanceLock {
  private shared = 0;
  private exclusive: Promise<void> | null = null;
  private waiters: Array<() => void> = [];

  async withShared<T>(fn: () => Promise<T>): Promise<T> {
    while (this.exclusive) await this.exclusive;
    this.shared++;
    try {
      return await fn();
    } finally {
      this.shared--;
      if (this.shared === 0) for (const wake of this.waiters.splice(0)) wake();
    }
  }

  async withExclusive<T>(fn: () => Promise<T>): Promise<T> {
    while (this.exclusive) await this.exclusive;
    let release: () => void = () => {};
    this.exclusive = new Promise<void>((resolve) => (release = resolve));
    try {
      while (this.shared > 0) await new Promise<void>((resolve) => this.waiters.push(resolve));
      return await fn();
    } finally {
      this.exclusive = null;
      release();
    }
  }
}

/** One per process: attempts in one process share one broker. */
export const brokerMaintenance = new MaintenanceLock();
