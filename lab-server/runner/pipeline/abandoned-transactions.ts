/**
 * Before loss and hanging transactions are judged: transactions that stopped or killed instances
 * left open. A producer that is gone without aborting (SIGKILL, or a design whose restarted
 * instance uses a new transactional.id: Kafka Streams under exactly_once_v2, say) leaves its
 * transaction to the coordinator, which aborts it once the transaction's own timeout has passed.
 * Judging the output inside that window would blame a correct program for the broker's schedule.
 * So the grader waits, bounded, for the broker to resolve them (DescribeTransactions gives each
 * one's start and timeout), measures how long read_committed readers were held back (the blocked
 * lag), and sorts what is left: a transaction that outlived its own timeout is hanging; one still
 * inside a long timeout when the wait ends blocks the output, which no-loss then explains.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describeError } from '../../../src/shared/errors.ts';
import type { OffsetsProbe } from '../../kafka/inspect.ts';
import { listTransactions, type TransactionInfo } from '../../kafka/transactions.ts';

/** The longest the grader waits for the coordinator (a transaction with a longer timeout stays open). */
export const ABANDONED_WAIT_CAP_MS = 20_000;
/** Beyond its timeout, how long the coordinator may take to notice (its abort sweep) before we call it hanging. */
const SWEEP_GRACE_MS = 3_000;
/** How long an EndTxn's markers may take to reach the partitions after the coordinator took it. */
const MARKERS_IN_FLIGHT_MS = 1_000;

export interface AbandonedTransactions {
  /** How long read_committed readers waited, from the oldest abandoned transaction's start to its end (0: none). */
  blockedMs: number;
  /** Open transactions that outlived their own timeout: hanging, whoever left them. */
  outlived: string[];
  /** Still open inside their own (long) timeout when the wait ended: the output is blocked behind them. */
  insideTimeout: string[];
  /** Whether the broker said which transactions were open (false: judged from LSO alone). */
  known: boolean;
}

export interface AbandonedSource {
  probe: OffsetsProbe;
  brokers: string[];
  /** Prefix of every transactional id the attempt's programs may use. */
  namespace: string;
  /** Real names of the topics a transaction of the program may write (output and internal). */
  topics: string[];
  system(line: string): void;
}

const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

async function openPartitions(src: AbandonedSource): Promise<number> {
  let open = 0;
  for (const topic of src.topics) for (const p of await src.probe.ends(topic)) if (p.lso < p.hwm) open++;
  return open;
}

export async function awaitAbandonedTransactions(src: AbandonedSource): Promise<AbandonedTransactions> {
  const none: AbandonedTransactions = { blockedMs: 0, outlived: [], insideTimeout: [], known: true };
  if ((await openPartitions(src)) === 0) return none;
  let ongoing: TransactionInfo[] | null = null;
  try {
    ongoing = (await listTransactions(src.brokers, src.namespace)).filter((t) => t.state === 'Ongoing');
  } catch (err) {
    src.system(`could not ask the broker which transactions are open (${describeError(err)}): judging from the log's offsets alone`);
  }
  const startOf = (t: TransactionInfo) => (t.startedAt ? Date.parse(t.startedAt) : Date.now());
  const endOf = (t: TransactionInfo) => startOf(t) + (t.timeoutMs ?? 60_000) + SWEEP_GRACE_MS;
  const started = Date.now();
  // Only a transaction whose timeout runs out within the cap can end while we wait: nobody else
  // is left to end it. One with a longer timeout is judged the same (inside its timeout) whether
  // we wait or not, so it costs no wait of its own, only a moment for markers still in flight.
  const reachable = ongoing?.filter((t) => endOf(t) <= started + ABANDONED_WAIT_CAP_MS) ?? [];
  const until = reachable.length ? Math.max(...reachable.map(endOf)) : started + (ongoing?.length ? MARKERS_IN_FLIGHT_MS : 5_000);
  if (ongoing?.length) {
    const beyond = ongoing.length - reachable.length;
    src.system(
      `Stopped instances left ${ongoing.length} transaction(s) open (${ongoing.map((t) => `${t.transactionalId}, timeout ${secs(t.timeoutMs ?? 60_000)}`).join('; ')}): ` +
        (reachable.length ? `waiting up to ${secs(until - started)} for the coordinator to abort ${beyond ? `the ${reachable.length} whose timeout ends within ${secs(ABANDONED_WAIT_CAP_MS)}` : 'them'} before verifying.` : `none times out within the ${secs(ABANDONED_WAIT_CAP_MS)} the grader would wait, so it verifies now.`),
    );
  }
  let open = 1;
  while (Date.now() < until && (open = await openPartitions(src)) > 0) await sleep(250);
  if (open > 0) open = await openPartitions(src);
  const oldestStart = ongoing?.length ? Math.min(...ongoing.map(startOf)) : started;
  if (open === 0) {
    const blockedMs = Date.now() - oldestStart;
    src.system(`The output is readable again: read_committed readers were held back for ${secs(blockedMs)} by transactions of stopped instances.`);
    return { ...none, blockedMs };
  }
  if (!ongoing) return { blockedMs: Date.now() - oldestStart, outlived: [], insideTimeout: [], known: false };
  // Who is still open now, and for how long they have been.
  let still: TransactionInfo[] = ongoing;
  try {
    still = (await listTransactions(src.brokers, src.namespace)).filter((t) => t.state === 'Ongoing');
  } catch {
    // The first answer stands: those were open, and the log's offsets say something still is.
  }
  // Something holds the log back, but not a transaction of this attempt's ids: the offsets decide.
  if (!still.length) return { blockedMs: Date.now() - oldestStart, outlived: [], insideTimeout: [], known: false };
  const now = Date.now();
  const describe = (t: TransactionInfo) => `${t.transactionalId} (producer ${t.producerId}) open for ${secs(now - startOf(t))}, timeout ${secs(t.timeoutMs ?? 60_000)}`;
  return {
    blockedMs: now - oldestStart,
    outlived: still.filter((t) => now > endOf(t)).map((t) => `${describe(t)}: it outlived its own timeout`),
    insideTimeout: still.filter((t) => now <= endOf(t)).map((t) => `${describe(t)}: left by a stopped instance and still inside its timeout, it holds back every read_committed reader`),
    known: true,
  };
}
