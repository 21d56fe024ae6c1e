/**
 * Is anything listening, and is it Kafka? Asked before a start (is the port free?), by the health
 * badge, and by every entry point deciding between a running broker and starting one.
 */
import net from 'node:net';
import { createKafka } from '../kafka/client.ts';

/** True when something accepts TCP connections on 127.0.0.1:port. */
export function portAnswers(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    const done = (answer: boolean) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** True when a Kafka broker answers metadata at the address (with the grader's SASL login, unless plaintext). */
export async function isKafkaAt(address: string, timeoutMs = 3_000, options: { plaintext?: boolean } = {}): Promise<boolean> {
  const admin = createKafka([address], 'kafkaiq-probe', {
    connectionTimeout: timeoutMs,
    requestTimeout: timeoutMs,
    retry: { retries: 0 },
    // Only to tell "a plaintext Kafka" from "no Kafka" in an error message.
    ...(options.plaintext ? { sasl: undefined } : {}),
  }).admin();
  try {
    await admin.connect();
    await admin.describeCluster();
    return true;
  } catch {
    return false;
  } finally {
    await admin.disconnect().catch(() => {
      // The answer is in hand (or the broker is down): closing the probe's client has nothing to add.
    });
  }
}

/**
 * The health check: DescribeCluster (a metadata request) over the grader's login, answered within
 * deadlineMs or not at all. A port that accepts proves nothing: a JVM out of heap, stopped or
 * wedged still completes TCP handshakes from the kernel's backlog. The deadline is hard (a timer,
 * not only the client's timeouts), so a broker that accepts and then never answers is "down" on
 * time; the client is disconnected in the background.
 */
export async function answersWithin(address: string, deadlineMs: number): Promise<{ ok: true; ms: number } | { ok: false; reason: string }> {
  const started = performance.now();
  const admin = createKafka([address], 'kafkaiq-health', {
    connectionTimeout: deadlineMs,
    authenticationTimeout: deadlineMs,
    requestTimeout: deadlineMs,
    retry: { retries: 0 },
  }).admin();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer to a metadata request within ${deadlineMs} ms`)), deadlineMs);
  });
  try {
    await Promise.race([(async () => {
      await admin.connect();
      await admin.describeCluster();
    })(), late]);
    return { ok: true, ms: Math.round(performance.now() - started) };
  } catch (err) {
    return { ok: false, reason: err instanceof Error ? err.message : String(err) };
  } finally {
    clearTimeout(timer);
    // A wedged broker may never answer the disconnect either: not awaited.
    void admin.disconnect().catch(() => {
      // Nothing to do: the client is dropped either way.
    });
  }
}

/** How long the health check waits for the broker's answer before calling it down. */
export const HEALTH_DEADLINE_MS = 3_000;
