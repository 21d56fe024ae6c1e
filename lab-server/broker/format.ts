/**
 * A KRaft data dir made ready for its nodes: the cluster id (made once), each node's properties
 * (written afresh at every start, 0600: they hold the brokers' own password) and each node's
 * log directory formatted with Kafka's StorageTool where it is not yet.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { KafkaIqError } from '../../src/shared/errors.ts';
import { displayPath } from '../core/paths.ts';
import { BROKER_USER, GRADER_USER, kafkaSecret, passwordFor, secretFile } from '../kafka/credentials.ts';
import { classpath, toolJvmFlags } from './jvm-flags.ts';
import { serverProperties, type BrokerNode, type BrokerSecurity } from './server-properties.ts';

export interface DataDirLayout {
  dataDir: string;
  nodes: readonly BrokerNode[];
  javaCommand: string;
  nodeDir(nodeId: number): string;
  configPath(nodeId: number): string;
  logPath(nodeId: number): string;
}

export function formatIfNeeded(layout: DataDirLayout): void {
  const { dataDir, nodes, javaCommand, nodeDir, configPath, logPath } = layout;
  fs.mkdirSync(dataDir, { recursive: true });
  const clusterIdFile = path.join(dataDir, 'cluster-id');
  if (!fs.existsSync(clusterIdFile)) fs.writeFileSync(clusterIdFile, newClusterId());
  const clusterId = fs.readFileSync(clusterIdFile, 'utf8').trim();
  kafkaSecret(); // creates the secret on a first start
  const security: BrokerSecurity = { secretFile: path.resolve(secretFile()), brokerUser: BROKER_USER, brokerPassword: passwordFor(BROKER_USER), superUsers: [BROKER_USER, GRADER_USER] };
  for (const node of nodes) {
    fs.rmSync(configPath(node.nodeId), { force: true });
    fs.writeFileSync(configPath(node.nodeId), serverProperties(nodes, nodeDir, node, security), { mode: 0o600 });
    if (fs.existsSync(path.join(nodeDir(node.nodeId), 'meta.properties'))) continue;
    const result = spawnSync(javaCommand, [...toolJvmFlags(), '-cp', classpath(), 'kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', configPath(node.nodeId)], { encoding: 'utf8' });
    if (result.status !== 0) {
      fs.writeFileSync(logPath(node.nodeId), `${result.stdout}\n${result.stderr}`);
      throw new KafkaIqError('BROKER_START_FAILED', `Formatting the Kafka log directory failed: see ${displayPath(logPath(node.nodeId))} (delete ${displayPath(dataDir)} to start afresh).`);
    }
  }
}

/**
 * A KRaft cluster id: 16 random bytes, base64url, as Kafka's Uuid prints them. One that starts
 * with "-" would read as an option to `kafka-storage format -t`, so, like Kafka's own
 * Uuid.randomUuid, draw again (about 1 id in 64).
 */
function newClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}
