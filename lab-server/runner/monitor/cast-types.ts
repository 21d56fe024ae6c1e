/** The monitor cast's records of the grader's own transactions (cast.ts) and the incidents it causes. */
import type { Producer, Transaction } from 'kafkajs';

export interface Tracked {
  role: 'slow' | 'idle' | 'other' | 'hang';
  transactionalId: string;
  topic: string;
  partition: number;
  producer: Producer;
  /** A transaction begun on the client only (nothing sent yet): opening it is then a single send. */
  begun: Transaction | null;
  txn: Transaction | null;
  openedAtMs: number | null;
  offset: number | null;
  endedAtMs: number | null;
  maxLag: number;
}

export interface Cycle {
  idle: Tracked;
  other: Tracked;
  slow: Tracked;
  hangs: Tracked[];
}

/** How the grader's attempt to end one of its transactions went; `ended` false: it may still be open. */
export interface Ending {
  ended: boolean;
  note: string;
}

export interface Incident extends Tracked {
  n: number;
  qualifiesAtMs: number;
  deadlineMs: number;
  lagAtQualify: number | null;
  problem?: string;
}
