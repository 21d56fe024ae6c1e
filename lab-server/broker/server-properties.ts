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
 * StandardAuthorizer with allow.everyone.if.no.acl.found=false: a user may do only what an ACL
 * grants (the grader grants each attempt its namespace, kafka/attempt-acls.ts).
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
    'authorizer.class.name': 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
    'allow.everyone.if.no.acl.found': 'false',
    'super.users': security.superUsers.map((u) => `User:${u}`).join(';'),
    // Per attempt user: its own bucket of these rates (AttemptQuotaCallback); super users unthrottled.
    'client.quota.callback.class': 'dev.kafkaiq.broker.AttemptQuotaCallback',
    'kafkaiq.quota.produce.bytes.per.second': String(ATTEMPT_QUOTAS.produceBytesPerSecond),
    'kafkaiq.quota.fetch.bytes.per.second': String(ATTEMPT_QUOTAS.fetchBytesPerSecond),
    'kafkaiq.quota.request.percentage': String(ATTEMPT_QUOTAS.requestPercentage),
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
      : {}),
  };
  return Object.entries(props).map(([k, v]) => `${k}=${v}`).join('\n') + '\n';
}
