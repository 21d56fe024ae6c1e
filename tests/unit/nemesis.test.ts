/**
 * Every fault handler of the nemesis (runner/nemesis), driven through a fake program driver and
 * fake processes (tests/support/fake-program.ts): which instance is armed with what, what is
 * signalled, what is recorded, what is restarted. No Kafka: the broker's controls and the
 * coordinator lookup are fakes too; the API faults use the real lab API server (it runs here).
 */
import { describe, expect, it } from 'vitest';
import { FAULT_KINDS } from '../../src/shared/report.ts';
import { labApi } from '../../lab-server/api/lab-api.ts';
import { loadLab } from '../../lab-server/labs/load-lab.ts';
import type { NemesisContext } from '../../lab-server/runner/nemesis/context.ts';
import { FAULT_HANDLERS, injectFault } from '../../lab-server/runner/nemesis/index.ts';
import { manualFault, type ManualFaultHost } from '../../lab-server/runner/nemesis/manual.ts';
import type { ProgramProcess } from '../../lab-server/runner/program/program-instance.ts';
import type { Supervisor } from '../../lab-server/runner/program/supervisor.ts';
import { asPipeline } from '../support/labs.ts';
import { fakeAttempt, fault, wave } from '../support/fake-nemesis.ts';

describe('the nemesis table', () => {
  it('has one handler for every fault kind of a pipeline lab', () => {
    const pipelineKinds = FAULT_KINDS.filter((k) => k !== 'hanging-transaction');
    expect(Object.keys(FAULT_HANDLERS).sort()).toEqual([...pipelineKinds].sort());
  });

  it('leaves hanging-transaction (a monitor scenario fault) alone', async () => {
    const { ctx, waves, recorded } = fakeAttempt();
    await injectFault(ctx, fault('hanging-transaction'), wave(3));
    expect(waves).toEqual([]);
    expect(recorded).toEqual([]);
  });
});

describe('process faults', () => {
  it('kill: SIGKILL at the crash point, the LeaveGroup sent for it, a restart with the same identity', async () => {
    const a = fakeAttempt();
    a.members.add(a.first);
    await injectFault(a.ctx, fault('kill'), wave(4));
    expect(a.driver.armed).toEqual([{ instance: 'i1', action: 'kill', point: 'after:send' }]);
    expect(a.first.done).toEqual(['SIGKILL']);
    expect(a.expected.has(a.first)).toBe(true);
    expect(a.left).toEqual(['i1']);
    expect(a.recorded).toEqual([{ kind: 'kill', instance: 'i1', crashPoint: 'after:send', txnOpen: true, note: expect.stringContaining('LeaveGroup') }]);
    expect(a.slots.get(1)!.incarnation).toBe(2);
    expect(a.waves).toEqual([4]);
  });

  it('kill without a hit asks the driver whether a transaction was open, and sends no LeaveGroup for a program without group members', async () => {
    const a = fakeAttempt();
    a.driver.hit = null;
    a.driver.open = false;
    await injectFault(a.ctx, fault('kill'), wave(1));
    expect(a.recorded).toEqual([{ kind: 'kill', instance: 'i1', txnOpen: false }]);
    expect(a.left).toEqual([]);
  });

  it('stop: SIGTERM (a clean stop), then a restart', async () => {
    const a = fakeAttempt();
    await injectFault(a.ctx, fault('stop'), wave(1));
    expect(a.driver.armed[0]!.action).toBe('stop');
    expect(a.first.done).toEqual(['stop']);
    expect(a.recorded[0]).toMatchObject({ kind: 'stop', instance: 'i1', txnOpen: true });
    expect(a.slots.get(1)!.incarnation).toBe(2);
  });

  it('zombie: frozen, replaced with the same identity, new input for the replacement, then resumed', async () => {
    const a = fakeAttempt();
    a.first.exitOnResume = true; // fenced: its next call fails and it exits
    a.first.eventsOnResume = [{ t: 'failed', op: 'sendOffsets', txnOpen: true, error: 'There is a newer producer with the same transactionalId which fences the current one' }];
    expect(await injectFault(a.ctx, fault('zombie'), wave(2))).toBeUndefined();
    expect(a.driver.armed[0]!.action).toBe('pause');
    expect(a.first.done).toEqual(['pause', 'resume']);
    expect(a.slots.get(1)!.current).not.toBe(a.first);
    expect(a.slots.get(1)!.current.id).toBe('i1');
    expect(a.waves).toEqual([2, 2]);
    expect(a.zombies.size).toBe(0);
    expect(a.recorded[0]).toMatchObject({ kind: 'zombie', note: expect.stringContaining('replacement') });
    // No group member seen for it: no LeaveGroup to send, and the report does not claim one.
    expect(a.left).toEqual([]);
    expect(a.recorded[0]!.note).not.toContain('LeaveGroup');
  });

  it('zombie: the grader sends the LeaveGroup the frozen member cannot, so its replacement joins without waiting out its session', async () => {
    const a = fakeAttempt();
    a.members.add(a.first);
    a.first.exitOnResume = true;
    a.first.eventsOnResume = [{ t: 'failed', op: 'sendOffsets', txnOpen: true, error: 'There is a newer producer with the same transactionalId which fences the current one' }];
    expect(await injectFault(a.ctx, fault('zombie'), wave(2))).toBeUndefined();
    expect(a.left).toEqual(['i1']);
    expect(a.first.done).toEqual(['pause', 'resume']);
    expect(a.recorded[0]).toMatchObject({ kind: 'zombie', note: expect.stringContaining('the grader sends the LeaveGroup the frozen one cannot') });
  });

  it('zombie: one that exits on waking before the broker judged a call of it is owed again', async () => {
    const a = fakeAttempt();
    a.first.exitOnResume = true;
    // A broker restart while it slept: its first call after waking fails unjudged, and it crashes.
    a.first.eventsOnResume = [{ t: 'failed', op: 'sendOffsets', txnOpen: true, error: 'Closed connection' }];
    const outcome = await injectFault(a.ctx, fault('zombie'), wave(2));
    expect(outcome).toMatchObject({ withoutEffect: expect.stringMatching(/before the broker judged any call of it \(sendOffsets failed: Closed connection\)/) });
    const silent = fakeAttempt();
    silent.first.exitOnResume = true;
    expect(await injectFault(silent.ctx, fault('zombie'), wave(2))).toMatchObject({ withoutEffect: expect.stringContaining('no transactional call') });
  });

  it('zombie: one whose transaction outlived its own timeout while frozen is owed again (the broker aborted it, nothing was fenced)', async () => {
    const fenced = 'Producer attempted an operation with an old epoch. Either there is a newer producer with the same transactionalId, or the producer\'s transaction has been expired by the broker';
    const expired = fakeAttempt();
    expired.broker.expiry = Date.now() - 1_000; // already past when it wakes
    expired.first.exitOnResume = true;
    expired.first.eventsOnResume = [{ t: 'failed', op: 'commit', txnOpen: true, error: fenced }];
    expect(await injectFault(expired.ctx, fault('zombie'), wave(2))).toMatchObject({ withoutEffect: expect.stringMatching(/after its transaction's own transactionTimeout had run out/) });
    expect(expired.broker.asked).toBe(1);
    // Inside its timeout the same refusal is the broker's verdict on the zombie: it counts.
    const inTime = fakeAttempt();
    inTime.broker.expiry = Date.now() + 60_000;
    inTime.first.exitOnResume = true;
    inTime.first.eventsOnResume = [{ t: 'failed', op: 'commit', txnOpen: true, error: fenced }];
    expect(await injectFault(inTime.ctx, fault('zombie'), wave(2))).toBeUndefined();
    // Past its timeout but its commit went through (the coordinator had not swept it yet): it counts.
    const through = fakeAttempt();
    through.broker.expiry = Date.now() - 1_000;
    through.first.exitOnResume = true;
    through.first.eventsOnResume = [{ t: 'call', point: 'after:commit', txnOpen: false }];
    expect(await injectFault(through.ctx, fault('zombie'), wave(2))).toBeUndefined();
    // Frozen between transactions: nothing to expire, the broker is not asked.
    const between = fakeAttempt();
    between.driver.hit = { txnOpen: false };
    between.broker.expiry = Date.now() - 1_000;
    between.first.exitOnResume = true;
    between.first.eventsOnResume = [{ t: 'failed', op: 'commit', txnOpen: true, error: fenced }];
    expect(await injectFault(between.ctx, fault('zombie'), wave(2))).toBeUndefined();
    expect(between.broker.asked).toBe(0);
  });

  it('zombie: one that commits after waking had its effect', async () => {
    const a = fakeAttempt();
    a.first.exitOnResume = true;
    a.first.eventsOnResume = [{ t: 'call', point: 'before:commit', txnOpen: true }, { t: 'call', point: 'after:commit', txnOpen: false }];
    expect(await injectFault(a.ctx, fault('zombie'), wave(2))).toBeUndefined();
  });

  it('zombie: one that keeps running after it was resumed is stopped', async () => {
    const a = fakeAttempt();
    await injectFault(a.ctx, fault('zombie'), wave(2));
    expect(a.first.done).toEqual(['pause', 'resume', 'stop']);
    expect(a.lines.some((l) => l.includes('still running 4 s after it woke'))).toBe(true);
  }, 10_000);

  it('pause: frozen past the session timeout with no replacement, then resumed', async () => {
    const a = fakeAttempt();
    const started = Date.now();
    await injectFault(a.ctx, fault('pause'), wave(2));
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_000);
    expect(a.first.done).toEqual(['pause', 'resume']);
    expect(a.slots.get(1)!.current).toBe(a.first);
    expect(a.recorded[0]).toMatchObject({ kind: 'pause', note: expect.stringContaining('no replacement') });
    expect(a.lines.some((l) => l.includes('took over i1'))).toBe(true);
  }, 10_000);

  it('join: a new instance in the next slot', async () => {
    const a = fakeAttempt();
    await injectFault(a.ctx, fault('join', { crashPoint: undefined }), wave(3));
    expect(a.slots.get(2)!.current.id).toBe('i2');
    expect(a.recorded).toEqual([{ kind: 'join', instance: 'i2', txnOpen: false, note: 'a new instance joins the group' }]);
  });

  it('send-error: armed as an error; recorded as not injected when the program made no send', async () => {
    const hit = fakeAttempt();
    await injectFault(hit.ctx, fault('send-error'), wave(1));
    expect(hit.driver.armed[0]!.action).toBe('error');
    expect(hit.recorded[0]!.note).toContain('leader had moved');
    const missed = fakeAttempt();
    missed.driver.hit = null;
    await injectFault(missed.ctx, fault('send-error'), wave(1));
    expect(missed.recorded[0]!.note).toContain('not injected');
    expect(missed.first.done).toEqual([]);
  });
});

describe('broker faults', () => {
  it('broker-restart: every broker restarts under the exclusive maintenance lock', async () => {
    const a = fakeAttempt();
    await injectFault(a.ctx, fault('broker-restart', { crashPoint: undefined }), wave(1));
    expect(a.cluster.restarts).toBe(1);
    expect(a.cluster.exclusiveDuringRestart).toBe(true);
    expect(a.recorded[0]).toMatchObject({ kind: 'broker-restart', instance: 'broker', txnOpen: true });
  });

  it('broker-restart on an external cluster is skipped, and says so', async () => {
    const a = fakeAttempt({ control: false });
    await injectFault(a.ctx, fault('broker-restart', { crashPoint: undefined }), wave(1));
    expect(a.recorded[0]!.note).toContain('skipped');
  });

  it('coordinator-kill: SIGKILL of the coordinator while the program is held, resumed at once, the node started again', async () => {
    const a = fakeAttempt();
    await injectFault(a.ctx, fault('coordinator-kill', { crashPoint: 'before:commit' }), wave(1));
    expect(a.driver.armed[0]).toEqual({ instance: 'i1', action: 'pause', point: 'before:commit' });
    expect(a.cluster.killed).toEqual([2]);
    expect(a.first.done).toEqual(['resume']);
    expect(a.recorded[0]).toMatchObject({ kind: 'coordinator-kill', instance: 'broker-2', crashPoint: 'before:commit' });
    await a.ctx.cluster.maintenance.whenWhole();
    expect(a.cluster.started).toEqual([2]);
  }, 10_000);

  it('coordinator-kill needs three brokers: with one, the held program is let go and the fault skipped', async () => {
    const a = fakeAttempt({ nodes: 1 });
    await injectFault(a.ctx, fault('coordinator-kill', { crashPoint: 'before:commit' }), wave(1));
    expect(a.cluster.killed).toEqual([]);
    expect(a.first.done).toEqual(['resume']);
    expect(a.recorded[0]!.note).toContain('needs 3');
  });
});

describe('API faults', () => {
  it('skips an API fault in a lab without an API', async () => {
    const a = fakeAttempt();
    await injectFault(a.ctx, fault('api-error', { crashPoint: undefined }), wave(1));
    expect(a.waves).toEqual([1]);
    expect(a.recorded[0]).toMatchObject({ kind: 'api-error', instance: 'api', note: 'skipped: this lab has no API' });
  });

  /** A fake attempt on the http-idempotency lab whose every wave makes the "program" POST a payment to the real lab API. */
  async function apiAttempt(timeoutMs?: number) {
    const lab = asPipeline((await loadLab('http-idempotency')).definition);
    const ns = (await labApi()).open(`nemesis-${Date.now()}-${Math.random().toString(36).slice(2, 6)}`);
    const a = fakeAttempt({ lab, api: ns });
    const writeWave = a.ctx.input.writeWave;
    const answers: (number | 'gave up')[] = [];
    (a.ctx.input as { writeWave: NemesisContext['input']['writeWave'] }).writeWave = async (w) => {
      await writeWave(w);
      const call = fetch(`${ns.baseUrl}/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': 'k1' },
        body: JSON.stringify({ paymentId: 'p1', amountCents: 100, currency: 'EUR' }),
        ...(timeoutMs ? { signal: AbortSignal.timeout(timeoutMs) } : {}),
      }).then(
        (res) => void answers.push(res.status),
        () => void answers.push('gave up'),
      );
      if (!timeoutMs) await call;
    };
    return { a, ns, lab, answers };
  }

  it('api-error: the next call to the real lab API gets the error, nothing is applied, and the note names the call', async () => {
    const { a, ns, lab, answers } = await apiAttempt();
    try {
      await injectFault(a.ctx, fault('api-error', { crashPoint: undefined }), wave(1));
      expect(answers).toEqual([lab.api!.faults.errorStatus]);
      expect(a.recorded[0]).toMatchObject({ kind: 'api-error', instance: 'api', txnOpen: null, note: expect.stringContaining('POST /payments with key "k1"') });
      expect(ns.effects).toEqual([]);
    } finally {
      ns.close();
    }
  });

  it('api-slow: the next call is answered late, and applied', async () => {
    const { a, ns, lab, answers } = await apiAttempt();
    try {
      const started = Date.now();
      await injectFault(a.ctx, fault('api-slow', { crashPoint: undefined }), wave(1));
      expect(Date.now() - started).toBeGreaterThanOrEqual(lab.api!.faults.slowMs - 50);
      expect(answers).toEqual([201]);
      expect(a.recorded[0]!.note).toMatch(/late .*first: POST \/payments with key "k1"/);
      expect(ns.effects.map((e) => e.id)).toEqual(['p1']);
    } finally {
      ns.close();
    }
  }, 30_000);

  it('api-timeout: the effect is applied but the answer held until the client gives up', async () => {
    const { a, ns, answers } = await apiAttempt(500);
    try {
      await injectFault(a.ctx, fault('api-timeout', { crashPoint: undefined }), wave(1));
      expect(a.recorded[0]!.note).toMatch(/applied POST \/payments with key "k1" but held the answer/);
      expect(ns.effects.map((e) => e.id)).toEqual(['p1']);
      await new Promise((r) => setTimeout(r, 700));
      expect(answers).toEqual(['gave up']);
    } finally {
      ns.close();
    }
  });
});

describe('manual faults (the workbench)', () => {
  const host = (a: ReturnType<typeof fakeAttempt>, noAddInstance: string | null = null): ManualFaultHost & { faults: string[] } => {
    const faults: string[] = [];
    const supervisor = {
      expectExit: (i: ProgramProcess) => void a.expected.add(i),
      get nextSlot() {
        return a.ctx.program.nextSlot;
      },
    } as unknown as Supervisor; // only what manualFault uses of it
    return {
      faults,
      supervisor,
      control: a.ctx.cluster.control,
      maintenance: a.ctx.cluster.maintenance,
      target: () => a.slots.get(1),
      record: (kind, instance, note) => void faults.push(`${kind} ${instance}: ${note}`),
      startSlot: (n) => a.ctx.program.startSlot(n),
      system: () => {},
      emitState: () => {},
      words: { kill: 'killed by you', pause: { kind: 'zombie', note: 'paused by you' }, noAddInstance },
    };
  };

  it('kill restarts the instance; pause and resume signal it; broker-restart uses the planned fault\'s restart', async () => {
    const a = fakeAttempt();
    const h = host(a);
    await manualFault(h, 'pause');
    await manualFault(h, 'resume');
    await manualFault(h, 'kill');
    await manualFault(h, 'broker-restart');
    expect(a.first.done).toEqual(['pause', 'resume', 'SIGKILL']);
    expect(a.slots.get(1)!.incarnation).toBe(2);
    expect(a.cluster.exclusiveDuringRestart).toBe(true);
    expect(h.faults).toEqual(['zombie i1: paused by you', 'kill i1: killed by you', 'broker-restart broker: restarted by you']);
  });

  it('add-instance: up to six instances, and not at all where the lab kind has one', async () => {
    const a = fakeAttempt();
    const h = host(a);
    for (let i = 2; i <= 6; i++) await manualFault(h, 'add-instance');
    expect([...a.slots.keys()]).toEqual([1, 2, 3, 4, 5, 6]);
    await expect(manualFault(h, 'add-instance')).rejects.toThrow(/At most 6/);
    await expect(manualFault(host(fakeAttempt(), 'one instance only'), 'add-instance')).rejects.toThrow('one instance only');
  });
});
