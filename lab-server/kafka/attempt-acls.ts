/**
 * One attempt's Kafka identity: a user (kafka/credentials.ts) and the ACLs that wall it into the
 * names the lab gives it, granted before its program starts and deleted when the attempt ends.
 * Least privilege, allow-list only (the broker denies whatever no ACL allows), every binding
 * LITERAL: exactly the names of kafka/attempt-names.ts, nothing by prefix.
 *  - each topic of the attempt: READ, DESCRIBE;
 *  - the topics the program writes (its outputs and the internal ones between its stages): WRITE;
 *  - each consumer group the lab gives it: READ;
 *  - each transactional id the lab gives it: WRITE, DESCRIBE;
 *  - the cluster: IDEMPOTENT_WRITE (implied by topic WRITE since Kafka 3.0, granted for older brokers).
 * No CREATE, DELETE, ALTER or ALTER_CONFIGS anywhere, nothing on internal topics unless a lab
 * declares a read of one (the hanging-transaction monitor reads __transaction_state). The grader's
 * own groups and transactional ids live under another prefix (attempt-names.ts), so no grant
 * reaches them.
 */
import type { Admin, Kafka } from 'kafkajs';
import { describeError, KafkaIqError } from '../../src/shared/errors.ts';
import { bestEffort } from '../core/best-effort.ts';
import { retry } from '../core/retry.ts';
import { GRADER_PREFIX, type LearnerNames } from './attempt-names.ts';
import { createKafka, kafkajs, withAdmin, withAdminRetrying } from './client.ts';
import { attemptUser, passwordFor, saslEnv } from './credentials.ts';

const { AclResourceTypes, AclOperationTypes, AclPermissionTypes, ResourcePatternTypes } = kafkajs;

export interface AttemptGrants extends LearnerNames {
  /** Every topic, group and transactional id of the attempt starts with `${namespace}-`. */
  namespace: string;
  /** Topics outside the namespace the lab's program must read (LITERAL, READ+DESCRIBE). */
  extraReadTopics?: readonly string[];
  /** When the user's password stops working, whatever happens to this process. */
  expiresAtMs: number;
}

type AclEntry = Parameters<Admin['createAcls']>[0]['acl'][number];

/** The ACL bindings of an attempt: exactly the list the file comment gives, one name each. */
export function attemptAcls(user: string, grants: AttemptGrants): AclEntry[] {
  const principal = `User:${user}`;
  const prefix = `${grants.namespace}-`;
  const allow = (resourceType: number, resourceName: string, operation: number): AclEntry => ({
    resourceType,
    resourceName,
    resourcePatternType: ResourcePatternTypes.LITERAL,
    principal,
    host: '*',
    operation,
    permissionType: AclPermissionTypes.ALLOW,
  });
  const { TOPIC, GROUP, TRANSACTIONAL_ID, CLUSTER } = AclResourceTypes;
  const { READ, WRITE, DESCRIBE, IDEMPOTENT_WRITE } = AclOperationTypes;
  const own = [...grants.topics, ...grants.writeTopics, ...grants.groups, ...grants.transactionalIds];
  for (const name of own) {
    if (!name.startsWith(prefix) || name.startsWith(GRADER_PREFIX)) throw new KafkaIqError('INTERNAL', `${name} is outside the attempt's namespace ${grants.namespace}`);
  }
  for (const topic of grants.writeTopics) {
    if (!grants.topics.includes(topic)) throw new KafkaIqError('INTERNAL', `write topic ${topic} is not one of the attempt's topics`);
  }
  if (!grants.topics.length) throw new KafkaIqError('INTERNAL', 'an attempt needs at least one topic');
  const [probe, ...others] = grants.topics;
  return [
    ...grants.topics.map((t) => allow(TOPIC, t, READ)),
    ...others.map((t) => allow(TOPIC, t, DESCRIBE)),
    ...grants.writeTopics.map((t) => allow(TOPIC, t, WRITE)),
    ...grants.groups.map((g) => allow(GROUP, g, READ)),
    ...grants.transactionalIds.flatMap((id) => [allow(TRANSACTIONAL_ID, id, WRITE), allow(TRANSACTIONAL_ID, id, DESCRIBE)]),
    allow(CLUSTER, 'kafka-cluster', IDEMPOTENT_WRITE),
    ...(grants.extraReadTopics ?? []).flatMap((t) => [allow(TOPIC, t, READ), allow(TOPIC, t, DESCRIBE)]),
    // Last on purpose: the broker applies one CreateAcls as one batch, and this is what
    // waitUntilGranted probes for (grantAttempt's probe topic is the first topic).
    allow(TOPIC, probe!, DESCRIBE),
  ];
}

export interface AttemptIdentity {
  user: string;
  /** The env a program gets besides KAFKA_BROKERS: KAFKA_SASL_MECHANISM/USERNAME/PASSWORD, KAFKA_SECURITY_PROTOCOL. */
  env: Record<string, string>;
  /** How long the grant took (createAcls plus waiting until every broker applies them). */
  setupMs: number;
  /** Deletes every ACL of the user; idempotent, best effort after a retry (the user expires anyway). */
  revoke(): Promise<void>;
}

/**
 * Grants the attempt its ACLs and waits until every broker enforces them: a program must never
 * start before its rights exist, or its first Metadata would fail with an authorization error.
 */
export async function grantAttempt(kafka: Kafka, brokers: readonly string[], grants: AttemptGrants): Promise<AttemptIdentity> {
  const probeTopic = grants.topics[0]!;
  const started = performance.now();
  const user = attemptUser(grants.namespace, grants.expiresAtMs);
  try {
    // Another grade's broker-restart fault may have the broker down right now: retry past it
    // (CreateAcls of the same bindings twice is harmless).
    await withAdminRetrying(kafka, (admin) => admin.createAcls({ acl: attemptAcls(user, grants) }), { retries: 12, minDelayMs: 250, maxDelayMs: 2_000 });
  } catch (err) {
    throw new KafkaIqError('BROKER_UNREACHABLE', `Kafka did not accept the attempt's ACLs (${describeError(err)}): is the broker running, and is the lab server's user a super user?`, { cause: err });
  }
  await Promise.all(brokers.map((b) => waitUntilGranted(b, user, probeTopic)));
  let revoked: Promise<void> | null = null;
  return {
    user,
    env: saslEnv(user),
    setupMs: Math.round(performance.now() - started),
    revoke: () => (revoked ??= revokeUser(kafka, user)),
  };
}

async function revokeUser(kafka: Kafka, user: string): Promise<void> {
  const filter = {
    resourceType: AclResourceTypes.ANY,
    resourcePatternType: ResourcePatternTypes.ANY,
    principal: `User:${user}`,
    host: '*',
    operation: AclOperationTypes.ANY,
    permissionType: AclPermissionTypes.ANY,
  };
  // The broker may be restarting (a fault of another grade): tried again shortly; if it never
  // answers, the user's expiry still ends its rights.
  await bestEffort(
    `delete the ACLs of ${user}`,
    retry(() => withAdmin(kafka, (admin) => admin.deleteAcls({ filters: [filter as Parameters<Admin['deleteAcls']>[0]['filters'][number]] })), {
      retries: 2,
      minDelayMs: 500,
      maxDelayMs: 1_000,
    }),
  );
}

/** Asks one broker, as the attempt's user, to describe a topic of the namespace until it may. */
async function waitUntilGranted(broker: string, user: string, topic: string): Promise<void> {
  const kafka = createKafka([broker], 'kafkaiq-acl-probe', {
    sasl: { mechanism: 'plain', username: user, password: passwordFor(user) },
    retry: { retries: 0 },
  });
  try {
    await withAdminRetrying(kafka, (admin) => admin.fetchTopicMetadata({ topics: [topic] }), { retries: Infinity, minDelayMs: 25, maxDelayMs: 25, timeoutMs: 30_000 });
  } catch (err) {
    throw new KafkaIqError('BROKER_UNREACHABLE', `Broker ${broker} did not apply the attempt's ACLs within 30 s (${describeError(err)}).`, { cause: err });
  }
}
