/**
 * A broker node's restart inside its running JVM (broker/src/.../RestartableBroker.java): the
 * server stops cleanly and starts again on the same data, as a restarted process would, while the
 * JVM's loaded and compiled classes stay. A new JVM costs seconds of CPU to start and warm up,
 * and every full plan restarts the broker.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** What RestartableBroker prints on stdout (the node's log) once its new server has started. */
export const RESTARTED_LINE = '[kafkaiq] broker restarted in this JVM';
/** What it prints when the restart failed (the caller then starts a new JVM). */
export const RESTART_FAILED_LINE = '[kafkaiq] restart in this JVM failed';

/**
 * After this many restarts a node's next restart is a new JVM: a server's shutdown leaves a few
 * objects behind in static registries (metrics, MBeans), so a JVM is not restarted for ever.
 */
export const RESTARTS_PER_JVM = 40;

/**
 * How often the log is read for the answer. A restart in the JVM takes about half a second and
 * every full plan waits for it: a 100 ms poll added about 50 ms to each, a tenth.
 */
const ANSWER_POLL_MS = 20;

export type RestartOutcome = { ok: true } | { ok: false; why: string };

/**
 * Asks the node's JVM to restart its server and waits for its answer in the log (from the log's
 * current end), for the JVM's exit, or for the deadline.
 */
export async function restartInJvm(child: ChildProcess, logFile: string, timeoutMs: number): Promise<RestartOutcome> {
  if (!child.stdin || child.stdin.destroyed || child.exitCode !== null || child.signalCode !== null) return { ok: false, why: 'the JVM is not running' };
  let offset = fileSize(logFile);
  let exited = false;
  const onExit = () => (exited = true);
  child.once('exit', onExit);
  try {
    child.stdin.write('restart\n');
    const deadline = Date.now() + timeoutMs;
    let tail = '';
    while (Date.now() < deadline) {
      if (exited) return { ok: false, why: 'the JVM exited during the restart' };
      const size = fileSize(logFile);
      if (size > offset) {
        tail = (tail + readRange(logFile, offset, size)).slice(-64 * 1024);
        offset = size;
        if (tail.includes(RESTARTED_LINE)) return { ok: true };
        const failed = tail.indexOf(RESTART_FAILED_LINE);
        if (failed >= 0) return { ok: false, why: tail.slice(failed).split('\n')[0]!.trim() };
      }
      await sleep(ANSWER_POLL_MS);
    }
    return { ok: false, why: `no answer within ${Math.round(timeoutMs / 1000)} s` };
  } finally {
    child.off('exit', onExit);
  }
}

function fileSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0; // no log yet: everything the node writes is new
  }
}

function readRange(file: string, from: number, to: number): string {
  const fd = fs.openSync(file, 'r');
  try {
    const buf = Buffer.alloc(to - from);
    const read = fs.readSync(fd, buf, 0, buf.length, from);
    return buf.subarray(0, read).toString('utf8');
  } finally {
    fs.closeSync(fd);
  }
}
