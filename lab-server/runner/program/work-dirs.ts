/**
 * Attempt work dirs and sandbox folders are named after the server process that made them
 * (kafkaiq-<pid>-*, kafkaiq-sandbox-<pid>), so a server starting after a killed one can sweep
 * what that one left, and never touches the folders of a server still running beside it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { processAlive } from '../../core/process-alive.ts';
import { sweepStaleCgroups } from './sandbox/cgroup.ts';

const OWNED = /^kafkaiq-(?:sandbox-)?(\d+)(?:-|$)/;

/** A new attempt work dir (0700), named after this process. */
export function createWorkDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `kafkaiq-${process.pid}-`));
}

/** Removes the work dirs, sandbox folders and cgroups of KafkaIQ processes that are gone. */
export function sweepStaleWorkDirs(tmp = os.tmpdir()): { dirs: number; cgroups: number } {
  let dirs = 0;
  for (const name of fs.readdirSync(tmp)) {
    const owner = OWNED.exec(name)?.[1];
    if (!owner || Number(owner) === process.pid || processAlive(Number(owner))) continue;
    fs.rmSync(path.join(tmp, name), { recursive: true, force: true });
    dirs++;
  }
  return { dirs, cgroups: sweepStaleCgroups() };
}
