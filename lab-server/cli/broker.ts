/**
 * `npm run broker`: the teaching broker in the foreground. Ctrl-C stops it cleanly.
 * `npm run broker -- --cluster` starts the 3-node cluster used by the failover labs instead
 * (127.0.0.1:9095-9097 by default: KAFKAIQ_BROKER_PORT + 3).
 */
import { parseArgs } from 'node:util';
import { BrokerProcess } from '../broker/broker-process.ts';
import { defaultClusterBasePort } from '../broker/ports.ts';
import { serveControl } from '../broker/cluster.ts';
import { describeError, KafkaIqError } from '../../src/shared/errors.ts';
import { displayPath } from '../core/paths.ts';

const { values } = parseArgs({ options: { cluster: { type: 'boolean', default: false }, port: { type: 'string' } } });
const broker = new BrokerProcess({
  nodes: values.cluster ? 3 : 1,
  // The cluster sits 3 ports above the single broker (9095-9097 by default), so both can run.
  basePort: values.port ? Number(values.port) : values.cluster ? defaultClusterBasePort() : undefined,
  log: (line) => console.log(line),
});

const started = Date.now();
try {
  await broker.start();
} catch (err) {
  console.error(`kafkaiq: ${describeError(err)}`);
  await broker.stop();
  process.exit(err instanceof KafkaIqError && err.isInfrastructure ? 2 : 1);
}
const stopServing = await serveControl(broker);
console.log(`Kafka ${values.cluster ? '3-node cluster' : 'broker'} ready at ${broker.brokers.join(',')} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
console.log(`Logs: ${broker.nodes.map((n) => displayPath(broker.logPath(n.nodeId))).join(', ')}. Press Ctrl-C to stop.`);

let stopping = false;
const shutdown = async () => {
  if (stopping) return;
  stopping = true;
  console.log('\nStopping Kafka...');
  await stopServing();
  await broker.stop();
  console.log('Kafka stopped.');
  process.exit(0);
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
