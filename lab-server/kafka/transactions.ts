/**
 * `inspect txns`: the transactions of a namespace as the coordinator sees them (ListTransactions,
 * DescribeTransactions, which kafkajs lacks). One long-lived JVM per cluster answers every request
 * (broker/src/.../TransactionsService.java), so a learner typing `txns` does not start a JVM each
 * time; requests queue one after another, each bounded in time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { KafkaIqError } from '../../src/shared/errors.ts';
import { BROKER_LIB_DIR } from '../core/paths.ts';
import { findJava } from '../broker/java.ts';
import { graderClientProperties } from './credentials.ts';

export interface TransactionInfo {
  transactionalId: string;
  state: string;
  producerId: number;
  startedAt: string | null;
  durationMs: number | null;
  /** The transaction.timeout.ms the producer registered (DescribeTransactions), when known. */
  timeoutMs: number | null;
  partitions: string[];
}

interface Answer {
  ok: boolean;
  error?: string;
  transactions?: { transactionalId: string; state: string; producerId: number; startMs: number; nowMs: number; timeoutMs: number; partitions: string[] }[];
}

const REQUEST_TIMEOUT_MS = 20_000;
/** Prefixes are namespaces ([a-z0-9-]); anything else never reaches the JVM's stdin. */
const PREFIX = /^[A-Za-z0-9._-]{1,120}$/;

class TransactionsService {
  private child: ChildProcess | null = null;
  private waiting: ((line: string | null) => void)[] = [];
  private tail: Promise<unknown> = Promise.resolve();

  constructor(private readonly brokers: string[]) {}

  private start(): ChildProcess {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) return this.child;
    const child = spawn(
      findJava().command,
      ['-Xmx128m', '-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC', '-cp', path.join(BROKER_LIB_DIR, '*'), 'dev.kafkaiq.broker.TransactionsService', this.brokers.join(','), graderClientProperties()],
      { stdio: ['pipe', 'pipe', 'ignore'] },
    );
    // A JVM that fails to start or dies answers through 'exit' or the request's timeout below.
    child.on('error', () => {});
    child.once('exit', () => {
      // Whoever waits gets "no answer"; the next request starts a fresh JVM.
      for (const wake of this.waiting.splice(0)) wake(null);
    });
    readline.createInterface({ input: child.stdout! }).on('line', (line) => this.waiting.shift()?.(line));
    child.unref();
    (child.stdout as unknown as { unref?: () => void }).unref?.();
    (child.stdin as unknown as { unref?: () => void }).unref?.();
    this.child = child;
    return child;
  }

  ask(prefix: string): Promise<Answer> {
    const run = async (): Promise<Answer> => {
      const child = this.start();
      const line = await new Promise<string | null>((resolve) => {
        const timer = setTimeout(() => {
          child.kill('SIGKILL'); // a stuck JVM is replaced by the next request
          resolve(null);
        }, REQUEST_TIMEOUT_MS);
        this.waiting.push((answer) => {
          clearTimeout(timer);
          resolve(answer);
        });
        child.stdin!.write(`${prefix}\n`);
      });
      if (line === null) return { ok: false, error: 'no answer within 20 s' };
      return JSON.parse(line) as Answer;
    };
    const answer = this.tail.then(run, run);
    this.tail = answer.catch(() => {}); // the caller gets the failure; the queue only orders requests
    return answer;
  }
}

const services = new Map<string, TransactionsService>();

/** Open and recent transactions whose transactional id starts with the prefix. */
export async function listTransactions(brokers: string[], prefix: string): Promise<TransactionInfo[]> {
  if (!PREFIX.test(prefix)) throw new KafkaIqError('INVALID_INPUT', `Not a transactional-id prefix: "${prefix.slice(0, 40)}"`);
  const key = brokers.join(',');
  let service = services.get(key);
  if (!service) services.set(key, (service = new TransactionsService(brokers)));
  const answer = await service.ask(prefix);
  if (!answer.ok) throw new KafkaIqError('BROKER_UNREACHABLE', `The transaction coordinator did not answer (${answer.error}): is Kafka running?`);
  return (answer.transactions ?? []).map((t) => ({
    transactionalId: t.transactionalId,
    state: t.state,
    producerId: t.producerId,
    startedAt: t.startMs > 0 ? new Date(t.startMs).toISOString() : null,
    durationMs: t.startMs > 0 ? t.nowMs - t.startMs : null,
    timeoutMs: t.timeoutMs > 0 ? t.timeoutMs : null,
    partitions: t.partitions,
  }));
}
