import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { connectCluster, type KafkaCluster } from '../../lab-server/broker/cluster.ts';
import { createKafka } from '../../lab-server/kafka/client.ts';
import { GRADER_USER, saslEnv } from '../../lab-server/kafka/credentials.ts';
import { testBrokers } from './brokers.ts';

/**
 * The Kafka login of a test's own program (one started outside an attempt, which has no attempt
 * user): the grader's. Tests of tenancy use real attempts instead (tests/security).
 */
export function testProgramSaslEnv(): Record<string, string> {
  return saslEnv(GRADER_USER);
}

export function testKafka(clientId = 'kafkaiq-test') {
  return createKafka(testBrokers(), clientId);
}

/** Unique names so test files can share one broker without seeing each other's data. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/**
 * The run's broker as the cluster a test file grades on (gradeProgram): connected before the
 * file's tests, closed after them. Call at the top level of the file; the getter is for the tests.
 */
export function useGradingCluster(): () => KafkaCluster {
  let cluster: KafkaCluster | undefined;
  beforeAll(async () => {
    process.env.KAFKA_BROKERS = testBrokers().join(',');
    cluster = await connectCluster();
  });
  afterAll(async () => {
    await cluster?.close();
  });
  return () => cluster!;
}
