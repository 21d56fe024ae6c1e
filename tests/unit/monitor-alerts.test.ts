/**
 * The rules that turn a monitor's alerts into the hanging-transaction-reported and no-false-alarms
 * checks (lab-server/runner/checkers/monitor-alerts.ts), and the monitoring lab's definition. The
 * whole grade runs in the lab matrix (tests/support/labs-matrix.ts).
 */
import { describe, expect, it } from 'vitest';
import { loadLab } from '../../lab-server/labs/load-lab.ts';
import { checkMonitorAlerts, parseAlert, type HangIncident, type MonitorJudgeInput } from '../../lab-server/runner/checkers/monitor-alerts.ts';

describe('monitor checks', () => {
  const watch = 'ns-watch';
  const incident: HangIncident = {
    n: 1,
    transactionalId: 'ns-app-7',
    partition: 1,
    openedAtMs: 10_000,
    offset: 200,
    qualifiesAtMs: 14_000,
    deadlineMs: 18_000,
    endedAtMs: 19_000,
    lagAtQualify: 80,
    maxLag: 120,
    created: true,
  };
  const input = (alerts: { atMs: number; value: object | string }[], extra: Partial<MonitorJudgeInput> = {}): MonitorJudgeInput => ({
    watchTopic: watch,
    threshold: 25,
    hangSeconds: 4,
    reportWithinSeconds: 4,
    incidents: [incident],
    lookAlikes: [
      { transactionalId: 'ns-app-6', why: 'a slow but healthy transaction' },
      { transactionalId: 'ns-billing-5', why: "hanging on another team's topic" },
    ],
    alerts: alerts.map((a, offset) => ({ atMs: a.atMs, offset, value: typeof a.value === 'string' ? a.value : JSON.stringify(a.value) })),
    quietSummary: 'the look-alikes',
    ...extra,
  });
  const alert = (over: object = {}) => ({ transactionalId: 'ns-app-7', topic: watch, partition: 1, blockedLag: 90, ...over });
  const verdicts = (i: MonitorJudgeInput) => {
    const { checks } = checkMonitorAlerts(i);
    return [checks.get('hanging-transaction-reported')!.passed, checks.get('no-false-alarms')!.passed];
  };

  it('passes a timely alert with the id, partition and a plausible lag (repeats allowed)', () => {
    expect(verdicts(input([{ atMs: 14_600, value: alert() }, { atMs: 15_600, value: alert({ blockedLag: '110' }) }]))).toEqual([true, true]);
  });

  it('fails a missing, late, low or implausible alert, and says what was expected and seen', () => {
    const none = checkMonitorAlerts(input([])).checks.get('hanging-transaction-reported')!;
    expect(none.passed).toBe(false);
    expect(none.evidence.join('\n')).toMatch(/expected between \+14\.0 s and \+18\.0 s an alert naming ns-app-7.*\n.*no alert about it at all/);
    expect(verdicts(input([{ atMs: 18_500, value: alert() }]))).toEqual([false, true]);
    expect(verdicts(input([{ atMs: 15_000, value: alert({ blockedLag: 3 }) }]))).toEqual([false, true]);
    expect(verdicts(input([{ atMs: 15_000, value: alert({ blockedLag: 5_000 }) }]))).toEqual([false, true]);
    expect(verdicts(input([{ atMs: 15_000, value: alert({ partition: 0 }) }]))).toEqual([false, true]);
  });

  it('counts an unnamed alert at the right place as a true alarm with a wrong name', () => {
    const judged = checkMonitorAlerts(input([{ atMs: 15_000, value: alert({ transactionalId: 'producer-17' }) }]));
    expect(judged.checks.get('hanging-transaction-reported')!.evidence.join('\n')).toMatch(/names "producer-17", not the transactional id/);
    expect(judged.checks.get('no-false-alarms')!.passed).toBe(true);
  });

  it('flags look-alikes, premature, stale, foreign and unreadable alerts as false alarms', () => {
    const cases: [object | string, number, RegExp][] = [
      [alert({ transactionalId: 'ns-app-6' }), 8_000, /slow but healthy/],
      [alert({ transactionalId: 'ns-billing-5', topic: 'ns-other-team' }), 15_000, /another team/],
      [alert(), 12_000, /premature: ns-app-7 had been open 2\.0 s/],
      [alert(), 23_000, /stale: ns-app-7 was fenced/],
      [alert({ transactionalId: 'x', topic: 'elsewhere' }), 15_000, /not about WATCH_TOPIC/],
      [alert({ transactionalId: 'x', partition: 2 }), 15_000, /no transaction was hanging on partition 2/],
      ['ALERT ns-app-7 is stuck', 15_000, /unreadable: the value is not JSON/],
    ];
    for (const [value, atMs, why] of cases) {
      const check = checkMonitorAlerts(input([{ atMs, value }])).checks.get('no-false-alarms')!;
      expect(check.passed, String(why)).toBe(false);
      expect(check.evidence.join('\n')).toMatch(why);
    }
  });

  it('parses alerts strictly but accepts numeric strings', () => {
    expect(parseAlert('{"transactionalId":"a","topic":"t","partition":"2","blockedLag":"30"}')).toEqual({ alert: { transactionalId: 'a', topic: 't', partition: 2, blockedLag: 30 } });
    expect(parseAlert('{"transactionalId":"a","topic":"t","partition":2}')).toEqual({ problem: 'missing blockedLag' });
    expect(parseAlert('[1]')).toEqual({ problem: 'the value is not a JSON object' });
    expect(parseAlert(null)).toEqual({ problem: 'the record has no value' });
  });

  it('loads the monitoring lab as kind "monitor" with only the monitor checks', async () => {
    const lab = await loadLab('hanging-txn-monitor');
    expect(lab.definition.kind).toBe('monitor');
    expect(lab.definition.checks).toEqual(['hanging-transaction-reported', 'no-false-alarms']);
    expect(lab.broken.length).toBeGreaterThanOrEqual(3);
    expect((await loadLab('single-stage')).definition.kind).toBe('pipeline');
  });
});
