/**
 * The ports of KafkaIQ's own brokers: the teaching broker on 9092 (or KAFKAIQ_BROKER_PORT), the
 * 3-node cluster of the failover labs on the three ports above it, and each node's controller
 * listener CONTROLLER_PORT_OFFSET above its broker port.
 */
import { KafkaIqError } from '../../src/shared/errors.ts';

/** How far above a node's broker port its KRaft controller listens (9092 → 19092). */
export const CONTROLLER_PORT_OFFSET = 10_000;

/** 9092 unless KAFKAIQ_BROKER_PORT moves KafkaIQ's own broker (e.g. when 9092 is taken). */
export function defaultBrokerPort(): number {
  const raw = process.env.KAFKAIQ_BROKER_PORT;
  if (!raw) return 9092;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1024 || port > 55_000) {
    throw new KafkaIqError('INVALID_INPUT', `KAFKAIQ_BROKER_PORT must be a port between 1024 and 55000, got "${raw}".`);
  }
  return port;
}

/**
 * First port of KafkaIQ's 3-node cluster (the failover labs): right above the single broker's,
 * 9095-9097 by default, so both can run side by side.
 */
export function defaultClusterBasePort(): number {
  return defaultBrokerPort() + 3;
}
