import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { checkKeepsUp } from '../../lab-server/runner/checkers/keeps-up.ts';
import { StallWatch, type StallSource } from '../../lab-server/runner/pipeline/stall-watch.ts';

/** A grade's view the test moves by hand: input waiting, the last activity, a hold. */
function source(): StallSource & { waiting_: number; activity: number; hold: string | null } {
  const started = Date.now();
  const src = {
    waiting_: 10,
    activity: Date.now(),
    hold: null as string | null,
    elapsed: () => Date.now() - started,
    waiting: () => src.waiting_,
    lastActivityAt: () => src.activity,
    holdReason: () => src.hold,
  };
  return src;
}

describe('keeps-up', () => {
  it('records a stall with the last call and output when input waits, nothing holds and nothing moves', async () => {
    const src = source();
    const watch = new StallWatch(src, 150);
    watch.noteEvent('i1', { t: 'failed', op: 'send', txnOpen: true, error: 'leader moved' });
    watch.noteLine('i1', 'There is already an ongoing transaction for this producer');
    for (let i = 0; i < 8; i++) {
      watch.poll();
      await sleep(40);
    }
    expect(watch.stalls).toHaveLength(1);
    const check = checkKeepsUp(watch.stalls, watch.boundMs, watch.longestMs);
    expect(check.passed).toBe(false);
    expect(check.evidence.join('\n')).toMatch(/10 committed inputs waiting/);
    expect(check.evidence.join('\n')).toMatch(/send, failed .*leader moved \(its transaction is still open\)/);
    expect(check.evidence.join('\n')).toMatch(/printed: i1: There is already an ongoing transaction/);
  });

  it('does not count time a fault holds the program, time without waiting input, or a program that moves', async () => {
    const src = source();
    const watch = new StallWatch(src, 150);
    src.hold = 'broker down';
    for (let i = 0; i < 6; i++) {
      watch.poll();
      await sleep(40);
    }
    src.hold = null;
    src.waiting_ = 0;
    for (let i = 0; i < 6; i++) {
      watch.poll();
      await sleep(40);
    }
    src.waiting_ = 5;
    for (let i = 0; i < 6; i++) {
      src.activity = Date.now();
      watch.poll();
      await sleep(40);
    }
    expect(watch.stalls).toEqual([]);
    expect(watch.longestMs).toBeLessThan(150);
    expect(checkKeepsUp(watch.stalls, watch.boundMs, watch.longestMs)).toMatchObject({ passed: true, evidence: [] });
  });

  it('counts a commit the wrapper reports as progress, and a loop of aborts as none', async () => {
    const committing = source();
    const watch = new StallWatch(committing, 150);
    for (let i = 0; i < 8; i++) {
      watch.noteEvent('i1', { t: 'call', point: 'after:commit', txnOpen: false });
      watch.poll();
      await sleep(40);
    }
    expect(watch.stalls).toEqual([]);
    // Aborting every transaction moves the output (records, then an abort marker) and commits
    // nothing: the source's activity stays put (pipeline/liveness.ts counts only committed offsets).
    const aborting = source();
    const livelock = new StallWatch(aborting, 150);
    for (let i = 0; i < 8; i++) {
      livelock.noteEvent('i1', { t: 'call', point: 'after:send', txnOpen: true });
      livelock.noteEvent('i1', { t: 'call', point: 'after:abort', txnOpen: false });
      livelock.poll();
      await sleep(40);
    }
    expect(livelock.stalls).toHaveLength(1);
    expect(checkKeepsUp(livelock.stalls, livelock.boundMs, livelock.longestMs).evidence.join('\n')).toMatch(/i1 last reached after:abort/);
  });

  it('one stretch is one stall, a second stretch after progress is another', async () => {
    const src = source();
    const watch = new StallWatch(src, 60);
    for (let i = 0; i < 5; i++) {
      watch.poll();
      await sleep(30);
    }
    src.activity = Date.now();
    for (let i = 0; i < 5; i++) {
      watch.poll();
      await sleep(30);
    }
    expect(watch.stalls).toHaveLength(2);
    expect(checkKeepsUp(watch.stalls, watch.boundMs, watch.longestMs).summary).toMatch(/stalled 2 times/);
  });
});
