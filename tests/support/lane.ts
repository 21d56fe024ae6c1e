/**
 * Setup file of the kafka tier, run in a test worker before each of its files: puts the worker's
 * lane (VITEST_POOL_ID, 1..maxWorkers) in the environment the file and its child processes read,
 * so that they find the lane's own brokers and no other:
 *  - KAFKAIQ_BROKER_PORT: the lane's teaching broker port (ports a file derives from it follow);
 *  - KAFKAIQ_CLUSTER_POOL: the lane's pools, served by the global setup;
 *  - KAFKA_BROKERS: the lane's teaching broker, started on the lane's first file.
 */
import { inject } from 'vitest';
import { askServedPool, CLUSTER_POOL_ENV } from '../../lab-server/broker/cluster-pool.ts';
import { LANE_PORT_STRIDE } from './lane-ports.ts';

const lane = Number(process.env.VITEST_POOL_ID ?? 1);
const laneUrl = `${inject('clusterPool')}/lanes/${lane}`;
process.env.KAFKAIQ_BROKER_PORT = String(inject('firstBrokerPort') + LANE_PORT_STRIDE * (lane - 1));
process.env[CLUSTER_POOL_ENV] = laneUrl;
process.env.KAFKA_BROKERS = inject('externalBrokers') || (await askServedPool(laneUrl, 'single')).join(',');
