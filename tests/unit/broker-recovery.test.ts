/**
 * The broker supervisor's crash-loop rule and quarantine (lab-server/broker/recovery.ts), with a
 * fake clock and a scratch folder; tests/broker-recovery.test.ts runs the same rule on a real broker.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CrashLoop, quarantine } from '../../lab-server/broker/recovery.ts';

describe('CrashLoop', () => {
  it('calls the state poisoned after three failed starts in a row', () => {
    const loop = new CrashLoop(3, 120_000, () => 0);
    loop.ready();
    loop.exited(); // died at once after a start: a failed start
    loop.startFailed();
    expect(loop.poisoned).toBe(false);
    loop.startFailed();
    expect(loop.poisoned).toBe(true);
    loop.reset();
    expect(loop.poisoned).toBe(false);
  });

  it('counts a node that dies soon after starting, and forgets one that stayed up past the window', () => {
    let now = 0;
    const loop = new CrashLoop(3, 120_000, () => now);
    for (let i = 0; i < 2; i++) {
      loop.ready();
      now += 30_000;
      loop.exited();
    }
    expect(loop.failedStarts).toBe(2);
    loop.ready();
    now += 120_000;
    loop.exited(); // it had stayed up: this exit starts the count afresh, and is not counted
    expect(loop.failedStarts).toBe(0);
  });

  it('counts an exit that follows no successful start', () => {
    const loop = new CrashLoop(3, 120_000, () => 1_000_000);
    loop.exited();
    loop.exited();
    loop.exited();
    expect(loop.poisoned).toBe(true);
  });
});

describe('quarantine', () => {
  it('moves the node dirs and the cluster id aside, keeps them, and prunes to the newest two', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-quarantine-'));
    try {
      const places: string[] = [];
      for (let i = 0; i < 3; i++) {
        fs.mkdirSync(path.join(dir, 'node-1'), { recursive: true });
        fs.writeFileSync(path.join(dir, 'node-1', 'meta.properties'), `try=${i}`);
        fs.writeFileSync(path.join(dir, 'cluster-id'), `id-${i}`);
        fs.writeFileSync(path.join(dir, 'node-1.log'), 'kept in place');
        places.push(quarantine(dir, ['node-1', 'cluster-id', 'node-2'], 2, new Date(Date.UTC(2026, 0, 1, 0, 0, i))));
        expect(fs.existsSync(path.join(dir, 'node-1'))).toBe(false);
        expect(fs.existsSync(path.join(dir, 'cluster-id'))).toBe(false);
      }
      expect(fs.readdirSync(path.join(dir, 'quarantine'))).toEqual(places.slice(1).map((p) => path.basename(p)));
      expect(fs.readFileSync(path.join(places[2]!, 'node-1', 'meta.properties'), 'utf8')).toBe('try=2');
      expect(fs.readFileSync(path.join(places[2]!, 'cluster-id'), 'utf8')).toBe('id-2');
      expect(fs.existsSync(path.join(dir, 'node-1.log'))).toBe(true);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
