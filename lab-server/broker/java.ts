import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { KafkaIqError } from '../../src/shared/errors.ts';

const MIN_JAVA = 17;

export interface JavaInfo {
  command: string;
  major: number;
}

/** Finds a Java 17+ (JAVA_HOME first, then PATH) or explains exactly how to get one. */
export function findJava(): JavaInfo {
  const command = process.env.JAVA_HOME ? path.join(process.env.JAVA_HOME, 'bin', 'java') : 'java';
  const probe = spawnSync(command, ['-version'], { encoding: 'utf8' });
  if (probe.error) {
    throw new KafkaIqError(
      'JAVA_MISSING',
      `Java not found (${process.env.JAVA_HOME ? 'JAVA_HOME=' + process.env.JAVA_HOME : 'no java on PATH'}): install Java ${MIN_JAVA}+ (e.g. 'sudo apt install openjdk-17-jre-headless' or https://adoptium.net) or set KAFKA_BROKERS to use an existing cluster.`,
    );
  }
  const text = `${probe.stderr}${probe.stdout}`;
  const match = /version "(\d+)(?:\.(\d+))?/.exec(text);
  const first = match ? Number(match[1]) : NaN;
  const major = first === 1 && match?.[2] ? Number(match[2]) : first;
  if (!Number.isFinite(major)) {
    throw new KafkaIqError('JAVA_MISSING', `Could not read the Java version from '${command} -version': install Java ${MIN_JAVA}+ or set JAVA_HOME to one.`);
  }
  if (major < MIN_JAVA) {
    throw new KafkaIqError(
      'JAVA_TOO_OLD',
      `Java ${major} found but Kafka 4 needs Java ${MIN_JAVA}+: install a newer JDK and point JAVA_HOME at it, or set KAFKA_BROKERS to use an existing cluster.`,
    );
  }
  return { command, major };
}
