import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';
import { createKafka } from '../../lab-server/kafka/client.ts';

export function testKafka(clientId = 'kafkaiq-test') {
  return createKafka(inject('brokers'), clientId);
}

/** Unique names so test files can share one broker without seeing each other's data. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}
