/**
 * The supervisor (runner/program/supervisor.ts) with real processes (small shell commands): a
 * program that exits on its own is restarted under the policy with a new incarnation of the same
 * identity, an exit the grader caused is not, and nothing restarts once it winds down.
 */
import type { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { MAX_MEMBERSHIPS, Supervisor, supervisorPolicy, type RestartPolicy } from '../../lab-server/runner/program/supervisor.ts';

const command = (cmd: string) => ({ kind: 'command' as const, command: cmd, cwd: '/tmp', writeDir: '/tmp' });

async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!condition() && Date.now() < end) await sleep(20);
}

describe('Supervisor', () => {
  it('restarts a program that exits on its own, with the same identity and the next incarnation', async () => {
    const lines: string[] = [];
    const starts: number[] = [];
    const supervisor = new Supervisor(() => command("sh -c 'exit 3'"), { env: () => ({}), line: () => {}, started: (slot) => void starts.push(slot.incarnation) }, supervisorPolicy((l) => lines.push(l)));
    supervisor.start(1);
    await until(() => starts.length >= 3);
    await supervisor.stopAll(500);
    expect(starts.slice(0, 3)).toEqual([1, 2, 3]);
    expect(supervisor.slot(1)!.current.id).toBe('i1');
    expect(supervisor.selfExits).toBeGreaterThanOrEqual(2);
    expect(lines[0]).toMatch(/^i1 exited on its own \(code 3\); restarting it in 0\.3 s/);
  });

  it('does not restart an exit the grader caused, nor anything after stopAll', async () => {
    const starts: number[] = [];
    const supervisor = new Supervisor(() => command('sleep 30'), { env: () => ({}), line: () => {}, started: (slot) => void starts.push(slot.incarnation) }, supervisorPolicy(() => {}));
    const slot = supervisor.start(1);
    supervisor.expectExit(slot.current);
    await slot.current.kill();
    supervisor.start(2);
    await supervisor.stopAll(500);
    await sleep(600);
    expect(starts).toEqual([1, 1]);
    expect(supervisor.selfExits).toBe(0);
    expect(supervisor.live()).toEqual([]);
  });

  it('remembers only the memberships of groups the attempt owns, one member each, at most MAX_MEMBERSHIPS', async () => {
    const owned = new Set(['kiq-a-group', ...Array.from({ length: 20 }, (_, i) => `kiq-a-group-${i}`)]);
    const supervisor = new Supervisor(() => command('sleep 30'), { env: () => ({}), line: () => {}, ownsGroup: (g) => owned.has(g) }, supervisorPolicy(() => {}));
    const slot = supervisor.start(1);
    const emit = (groupId: string, memberId: string) => (slot.current as unknown as EventEmitter).emit('event', { t: 'member', groupId, memberId });
    // A flood of foreign pairs (another attempt's group, made-up ones): none is kept.
    for (let i = 0; i < 3_000; i++) emit(i % 2 ? 'kiq-victim-group' : `foreign-${i}`, `m${i}`);
    expect(supervisor.members.get(slot.current)).toBeUndefined();
    emit('kiq-a-group', 'first');
    emit('kiq-a-group', 'rejoined');
    for (let i = 0; i < 20; i++) emit(`kiq-a-group-${i}`, `m${i}`);
    const kept = supervisor.members.get(slot.current)!;
    expect(kept.size).toBe(MAX_MEMBERSHIPS);
    expect(kept.get('kiq-a-group')).toBe('rejoined');
    // Without an ownership test nothing is kept at all.
    const bare = new Supervisor(() => command('sleep 30'), { env: () => ({}), line: () => {} }, supervisorPolicy(() => {}));
    const other = bare.start(1);
    (other.current as unknown as EventEmitter).emit('event', { t: 'member', groupId: 'kiq-a-group', memberId: 'm' });
    expect(bare.members.get(other.current)).toBeUndefined();
    await Promise.all([supervisor.stopAll(500), bare.stopAll(500)]);
  });

  it('hands the memberships of an instance that exited on its own to exitedOnItsOwn, and of one the grader killed to nobody', async () => {
    const handed: Array<[string, number, Array<[string, string]>]> = [];
    const supervisor = new Supervisor(
      () => command("sh -c 'sleep 0.5; exit 0'"),
      { env: () => ({}), line: () => {}, ownsGroup: (g) => g === 'kiq-a-group', exitedOnItsOwn: (instance, memberships) => void handed.push([instance.id, instance.incarnation, [...memberships]]) },
      supervisorPolicy(() => {}),
    );
    const first = supervisor.start(1).current;
    (first as unknown as EventEmitter).emit('event', { t: 'member', groupId: 'kiq-a-group', memberId: 'm-first' });
    await until(() => supervisor.slot(1)!.incarnation === 2);
    const second = supervisor.slot(1)!.current;
    (second as unknown as EventEmitter).emit('event', { t: 'member', groupId: 'kiq-a-group', memberId: 'm-second' });
    supervisor.expectExit(second);
    await second.kill();
    await supervisor.stopAll(500);
    expect(handed).toEqual([['i1', 1, [['kiq-a-group', 'm-first']]]]);
  });

  it('stops restarting when the policy says so (a throughput lane: at most a few restarts)', async () => {
    const policy: RestartPolicy = () => (supervisor.restarts >= 2 ? null : { delayMs: 10 });
    const supervisor = new Supervisor(() => command("sh -c 'exit 1'"), { env: () => ({}), line: () => {}, instanceId: () => 'lane' }, policy);
    supervisor.start(1);
    await until(() => !supervisor.running);
    expect(supervisor.restarts).toBe(2);
    expect(supervisor.slot(1)!.current.id).toBe('lane');
    expect(supervisor.running).toBe(false);
  });

  it('has given up only when every slot has, not while the grader restarts a killed instance, and no more once one starts again', async () => {
    const policy: RestartPolicy = (slot) => (slot.slot === 1 ? null : { delayMs: 10 });
    const supervisor = new Supervisor(() => command("sh -c 'exit 1'"), { env: () => ({}), line: () => {} }, policy);
    supervisor.start(1);
    await until(() => supervisor.gaveUp);
    expect(supervisor.gaveUp).toBe(true);
    // A slot the grader killed is between its incarnations, not given up.
    const sleeper = new Supervisor(() => command('sleep 30'), { env: () => ({}), line: () => {} }, policy);
    const slot = sleeper.start(1);
    sleeper.expectExit(slot.current);
    await slot.current.kill();
    expect(sleeper.gaveUp).toBe(false);
    sleeper.start(1);
    expect(sleeper.gaveUp).toBe(false);
    await sleeper.stopAll(500);
    // Slot 2 is still restarted: the program as a whole has not given up.
    supervisor.start(2);
    await sleep(100);
    expect(supervisor.gaveUp).toBe(false);
    await supervisor.stopAll(500);
  });
});
