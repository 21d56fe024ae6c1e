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
    await admin.disconnect().catch(() => {});
  }
}
