/**
 * The server.properties of one KRaft node (broker and controller in one JVM): a teaching broker
 * tuned to form groups at once and sweep abandoned transactions every few seconds, and for three
 * nodes the settings the failover labs rely on.
 */
/** One node of the cluster: its id, client port and controller port. */
export interface BrokerNode {
  nodeId: number;
  port: number;
  controllerPort: number;
}

/** How the nodes authenticate: the shared secret's file, and the brokers' own password. */
export interface BrokerSecurity {
  secretFile: string;
  brokerUser: string;
  brokerPassword: string;
  superUsers: string[];
}

/**
 * Every listener speaks SASL_PLAINTEXT with PLAIN, checked by our HmacPlainCallbackHandler (see
 * it for why PLAIN+HMAC over SCRAM); the controller listener too, so nothing on any port answers
 * an unauthenticated client. Learner programs are given the CLIENT listener only (KAFKA_BROKERS).
 * AttemptAuthorizer (Kafka's StandardAuthorizer plus bounds per attempt user) with
 * allow.everyone.if.no.acl.found=false: a user may do only what an ACL grants (the grader grants
 * each attempt its names, kafka/attempt-acls.ts). The limits of ATTEMPT_BROKER_LIMITS bound what
 * one attempt user can make the shared broker hold or do; super users are never limited.
 */
function securityProperties(security: BrokerSecurity): Record<string, string> {
  const handler = 'dev.kafkaiq.broker.HmacPlainCallbackHandler';
  const jaas = `org.apache.kafka.common.security.plain.PlainLoginModule required username="${security.brokerUser}" password="${security.brokerPassword}" secretFile="${security.secretFile}";`;
  return {
    'sasl.enabled.mechanisms': 'PLAIN',
    'sasl.mechanism.inter.broker.protocol': 'PLAIN',
    'sasl.mechanism.controller.protocol': 'PLAIN',
    'listener.name.client.plain.sasl.jaas.config': jaas,
    'listener.name.client.plain.sasl.server.callback.handler.class': handler,
    'listener.name.controller.plain.sasl.jaas.config': jaas,
    'listener.name.controller.plain.sasl.server.callback.handler.class': handler,
    'authorizer.class.name': 'dev.kafkaiq.broker.AttemptAuthorizer',
    'allow.everyone.if.no.acl.found': 'false',
    'super.users': security.superUsers.map((u) => `User:${u}`).join(';'),
    // Per attempt user: its own bucket of these rates (AttemptQuotaCallback); super users unthrottled.
    'client.quota.callback.class': 'dev.kafkaiq.broker.AttemptQuotaCallback',
    'kafkaiq.quota.produce.bytes.per.second': String(ATTEMPT_QUOTAS.produceBytesPerSecond),
    'kafkaiq.quota.fetch.bytes.per.second': String(ATTEMPT_QUOTAS.fetchBytesPerSecond),
    'kafkaiq.quota.request.percentage': String(ATTEMPT_QUOTAS.requestPercentage),
    ...limitProperties(),
  };
}

/**
 * What one attempt user may make the shared broker do or hold, past the byte quotas: the one
 * place these values are set (the Java plugins refuse to start without them).
 */
export const ATTEMPT_BROKER_LIMITS = {
  /** Transactional and group ids (AttemptAuthorizer): Kafka's own bound on topic names. */
  idMaxLength: 249,
  /** InitProducerId per user (AttemptAuthorizer): a lab's program starts a few producers, restarts a few. */
  initProducerIdsPerSecond: 10,
  initProducerIdsBurst: 100,
  /** Logins per user (HmacPlainCallbackHandler): every instance of an attempt, reconnecting after a restart at once. */
  authenticationsPerSecond: 20,
  authenticationsBurst: 200,
  authenticationLockoutMs: 5_000,
  /** How long the broker holds a connection whose login failed before closing it (Kafka's KIP-306). */
  failedAuthenticationDelayMs: 1_000,
  /** One request at most (Kafka's default is 100 MB), and all requests being read at once: the heap stays the broker's. */
  requestMaxBytes: 16 * 1024 * 1024,
  queuedRequestMaxBytes: 64 * 1024 * 1024,
};

/**
 * Why not Kafka's connection quotas (KIP-612 max.connection.creation.rate, max.connections.per.ip):
 * they act before a login, by listener or client address, and every client here (the grader, the
 * broker itself, each sandbox's relay) connects from 127.0.0.1 on the one client listener, so they
 * would throttle the grader with the flood. Per user, the login rate above bounds it instead, and
 * each sandbox's relay bounds the connections one program instance can open.
 */
function limitProperties(): Record<string, string> {
  const l = ATTEMPT_BROKER_LIMITS;
  return {
    'kafkaiq.limit.id.max.length': String(l.idMaxLength),
    'kafkaiq.limit.init.producer.ids.per.second': String(l.initProducerIdsPerSecond),
    'kafkaiq.limit.init.producer.ids.burst': String(l.initProducerIdsBurst),
    'kafkaiq.limit.authentications.per.second': String(l.authenticationsPerSecond),
    'kafkaiq.limit.authentications.burst': String(l.authenticationsBurst),
    'kafkaiq.limit.authentication.lockout.ms': String(l.authenticationLockoutMs),
    'connection.failed.authentication.delay.ms': String(l.failedAuthenticationDelayMs),
    'socket.request.max.bytes': String(l.requestMaxBytes),
    'queued.max.request.bytes': String(l.queuedRequestMaxBytes),
  };
}

/** What one attempt user may use of a broker: far above any lab's needs, far below a flood. */
export const ATTEMPT_QUOTAS = { produceBytesPerSecond: 4 * 1024 * 1024, fetchBytesPerSecond: 8 * 1024 * 1024, requestPercentage: 100 };

export function serverProperties(nodes: readonly BrokerNode[], nodeDir: (nodeId: number) => string, node: BrokerNode, security: BrokerSecurity): string {
  const replicas = nodes.length;
  const minIsr = replicas >= 3 ? 2 : 1;
  const voters = nodes.map((n) => `${n.nodeId}@127.0.0.1:${n.controllerPort}`).join(',');
  const props: Record<string, string | number> = {
    'process.roles': 'broker,controller',
    'node.id': node.nodeId,
    'controller.quorum.voters': voters,
    listeners: `CLIENT://127.0.0.1:${node.port},CONTROLLER://127.0.0.1:${node.controllerPort}`,
    'advertised.listeners': `CLIENT://127.0.0.1:${node.port}`,
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': 'CLIENT',
    'listener.security.protocol.map': 'CLIENT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT',
    ...securityProperties(security),
    'log.dirs': nodeDir(node.nodeId),
    'num.partitions': 1,
    'default.replication.factor': replicas,
    'min.insync.replicas': minIsr,
    // Topics are created by the lab runtime; a typo in a learner's topic name should fail loudly.
    'auto.create.topics.enable': 'false',
    'offsets.topic.replication.factor': replicas,
    // One partition each: coordinators load in a blink after a restart, and the failover lab has
    // exactly one transaction-coordinator leader to kill.
    'offsets.topic.num.partitions': 1,
    'transaction.state.log.replication.factor': replicas,
    'transaction.state.log.min.isr': minIsr,
    'transaction.state.log.num.partitions': 1,
    // Teaching broker: groups form at once, and abandoned transactions are swept every few seconds.
    'group.initial.rebalance.delay.ms': 0,
    'group.min.session.timeout.ms': 2_000,
    'transaction.abort.timed.out.transaction.cleanup.interval.ms': 2_000,
    'transaction.remove.expired.transaction.cleanup.interval.ms': 60_000,
    'num.network.threads': 2,
    'num.io.threads': 4,
    'background.threads': 4,
    'log.retention.hours': 24,
    // The log cleaner compacts only the internal topics here (offsets, transaction state), a few MB
    // at most. Kafka's default map for it is 128 MB allocated on the heap at start: a quarter of a
    // single node's and a third of a 3-node cluster node's, held for good in the old generation,
    // which the garbage collector then has to empty far more often under the grades' allocation.
    // 16 MB maps about 600,000 keys, more than one 16 MB segment of these topics holds.
    'log.cleaner.dedupe.buffer.size': 16 * 1024 * 1024,
    'log.segment.bytes': 16 * 1024 * 1024,
    'share.coordinator.state.topic.replication.factor': replicas,
    'share.coordinator.state.topic.min.isr': minIsr,
    ...(replicas >= 3
      ? {
          // The failover labs SIGKILL a node. The controller moves its partition leaderships
          // (the transaction coordinator's among them) only once it has fenced the node for
          // missing heartbeats: 9 s by default, 3 s here.
          'broker.heartbeat.interval.ms': 500,
          'broker.session.timeout.ms': 3_000,
          // No background leader moves: leaders change only when the grader kills a node,
          // never at some unplanned moment of another attempt's grade.
          'auto.leader.rebalance.enable': 'false',
        }
      : {
          // One node: no follower needs the controller's no-op records (KIP-835) to tell it is
          // caught up, and one every 500 ms (Kafka's default) is most of an idle broker's CPU.
          'metadata.max.idle.interval.ms': 0,
        }),
  };
  return Object.entries(props).map(([k, v]) => `${k}=${v}`).join('\n') + '\n';
}
