import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';
import { createKafka } from '../../lab-server/kafka/client.ts';
import { GRADER_USER, saslEnv } from '../../lab-server/kafka/credentials.ts';

/**
 * The Kafka login of a test's own program (one started outside an attempt, which has no attempt
 * user): the grader's. Tests of tenancy use real attempts instead (tests/security).
 */
export function testProgramSaslEnv(): Record<string, string> {
  return saslEnv(GRADER_USER);
}

export function testKafka(clientId = 'kafkaiq-test') {
  return createKafka(inject('brokers'), clientId);
}

/** Unique names so test files can share one broker without seeing each other's data. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}
