/**
 * What must hold before a broker node starts: one KafkaIQ process owns a data dir at a time (two
 * JVMs on one log dir would corrupt it), and the node's ports are free.
 */
import fs from 'node:fs';
import path from 'node:path';
import { KafkaIqError } from '../../src/shared/errors.ts';
import { displayPath } from '../core/paths.ts';
import { isKafkaAt, portAnswers } from './probes.ts';

/** The process that owns this data dir, if it is still alive (another terminal, a test run). */
export function liveOwner(dataDir: string): number | null {
  try {
    const pid = Number(fs.readFileSync(path.join(dataDir, 'owner.pid'), 'utf8'));
    if (!pid || pid === process.pid) return null;
    process.kill(pid, 0);
    return pid;
  } catch {
    return null; // no owner file, or its process is gone
  }
}

export function claimDataDir(dataDir: string): void {
  const owner = liveOwner(dataDir);
  if (owner) {
    throw new KafkaIqError(
      'PORT_TAKEN',
      `The KafkaIQ broker in ${displayPath(dataDir)} belongs to process ${owner} (is 'npm run broker' or 'npm start' running?): use that one, or stop it first.`,
    );
  }
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(path.join(dataDir, 'owner.pid'), String(process.pid));
  process.once('exit', () => {
    if (liveOwner(dataDir) === null) fs.rmSync(path.join(dataDir, 'owner.pid'), { force: true });
  });
}

export async function assertPortsFree(node: { port: number; controllerPort: number }): Promise<void> {
  for (const port of [node.port, node.controllerPort]) {
    if (!(await portAnswers(port))) continue;
    const kafka = port === node.port && ((await isKafkaAt(`127.0.0.1:${port}`)) || (await isKafkaAt(`127.0.0.1:${port}`, 3_000, { plaintext: true })));
    throw new KafkaIqError(
      'PORT_TAKEN',
      kafka
        ? `A Kafka broker is already running on 127.0.0.1:${port}: stop it, or use it with KAFKA_BROKERS=127.0.0.1:${port}.`
        : `Port ${port} on 127.0.0.1 is taken by another program (not Kafka): stop it ('lsof -i :${port}' shows which) or set KAFKA_BROKERS to an existing cluster.`,
    );
  }
}
