import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { KafkaIqError } from '../../src/shared/errors.ts';
import { BROKER_DIR, BROKER_LIB_DIR } from '../core/paths.ts';
import { findJava } from './java.ts';

const STAMP = path.join(BROKER_LIB_DIR, '.pom-sha256');


/** The pom and every Java source it builds: a change to either means a fresh build. */
function pomDigest(): string {
  const hash = createHash('sha256').update(fs.readFileSync(path.join(BROKER_DIR, 'pom.xml')));
  const sources = path.join(BROKER_DIR, 'src/main/java');
  for (const file of (fs.readdirSync(sources, { recursive: true }) as string[]).filter((f) => f.endsWith('.java')).sort()) {
    hash.update(file).update(fs.readFileSync(path.join(sources, file)));
  }
  return hash.digest('hex');
}

export function brokerJarsReady(): boolean {
  try {
    return fs.readFileSync(STAMP, 'utf8').trim() === pomDigest();
  } catch {
    return false;
  }
}

/**
 * Fetches Kafka's jars from Maven Central once (through the Maven wrapper, so only Java is
 * needed) and builds the launcher. Later calls return at once: the stamp records which pom
 * the jars came from, so editing the pom triggers a fresh fetch.
 */
export async function ensureBrokerJars(log: (line: string) => void = () => {}): Promise<{ fetched: boolean; ms: number }> {
  if (brokerJarsReady()) return { fetched: false, ms: 0 };
  return withFetchLock(async () => {
    if (brokerJarsReady()) return { fetched: false, ms: 0 }; // another process fetched while we waited
    const java = findJava();
    const started = Date.now();
    log('Fetching Apache Kafka jars from Maven Central (first run only, about 55 MB)...');
    // Build into a scratch folder and swap it in, so a running broker never sees a half-filled lib/.
    const scratch = `${BROKER_LIB_DIR}.tmp-${process.pid}`;
    fs.rmSync(scratch, { recursive: true, force: true });
    const isWindows = process.platform === 'win32';
    const wrapper = path.join(BROKER_DIR, isWindows ? 'mvnw.cmd' : 'mvnw');
    const env = { ...process.env };
    if (java.command !== 'java') env.JAVA_HOME = path.dirname(path.dirname(java.command));
    const output: string[] = [];
    const code = await new Promise<number>((resolve, reject) => {
      const child = spawn(wrapper, ['-B', '-q', '-f', path.join(BROKER_DIR, 'pom.xml'), `-Dkafkaiq.lib=${scratch}`, 'package'], {
        cwd: BROKER_DIR,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
        shell: isWindows,
      });
      const collect = (chunk: Buffer) => output.push(chunk.toString());
      child.stdout.on('data', collect);
      child.stderr.on('data', collect);
      child.on('error', reject);
      child.on('close', (c) => resolve(c ?? 1));
    });
    if (code !== 0) {
      fs.rmSync(scratch, { recursive: true, force: true });
      const text = output.join('');
      const logFile = path.join(BROKER_DIR, 'target', 'fetch.log');
      fs.mkdirSync(path.dirname(logFile), { recursive: true });
      fs.writeFileSync(logFile, text);
      const offline = /UnknownHost|Could not transfer|Connection refused|Network is unreachable|Failed to fetch|curl|wget|timed out/i.test(text);
      throw new KafkaIqError(
        'JAR_FETCH_FAILED',
        offline
          ? `Could not download Kafka from Maven Central (network unreachable?): check your connection or proxy (MAVEN_OPTS), or set KAFKA_BROKERS to an existing cluster. Log: broker/target/fetch.log`
          : `Building the broker classpath failed (Maven exit ${code}): see broker/target/fetch.log`,
      );
    }
    fs.writeFileSync(path.join(scratch, '.pom-sha256'), pomDigest() + '\n');
    const old = `${BROKER_LIB_DIR}.old-${process.pid}`;
    if (fs.existsSync(BROKER_LIB_DIR)) fs.renameSync(BROKER_LIB_DIR, old);
    fs.renameSync(scratch, BROKER_LIB_DIR);
    fs.rmSync(old, { recursive: true, force: true });
    return { fetched: true, ms: Date.now() - started };
  });
}

/** One fetch at a time across processes (npm start, a test run, the CLI): mkdir is atomic. */
async function withFetchLock<T>(fn: () => Promise<T>): Promise<T> {
  const lock = path.join(BROKER_DIR, '.fetch.lock');
  for (;;) {
    try {
      fs.mkdirSync(lock);
      fs.writeFileSync(path.join(lock, 'pid'), String(process.pid));
      break;
    } catch {
      let holder = 0;
      try {
        holder = Number(fs.readFileSync(path.join(lock, 'pid'), 'utf8'));
        process.kill(holder, 0);
      } catch {
        if (holder) fs.rmSync(lock, { recursive: true, force: true }); // its owner died
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  try {
    return await fn();
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}
