/**
 * The checks of a monitoring lab, decided from what the grader did (its hanging transactions and
 * the look-alikes it ran beside them) and every alert the monitor wrote. Pure: no Kafka here, so
 * the rules are unit-tested (tests/monitor-grading.test.ts).
 *
 *  - hanging-transaction-reported: for every hanging transaction, an alert that names its
 *    transactional id, WATCH_TOPIC and its partition, with a blockedLag of at least the threshold
 *    (and no more than the partition ever had behind it), no later than reportWithinSeconds after
 *    the transaction crossed both thresholds.
 *  - no-false-alarms: no alert about anything else: not the short workload transactions, not the
 *    slow one that committed in time, not the long one that blocked nobody, not the one hanging on
 *    another topic; not about a hanging transaction before it was open HANG_SECONDS, nor long
 *    after it ended; and every alert readable (JSON with the four fields).
 */
import type { CheckName, CheckResult } from '../../../src/shared/report.ts';
import { capEvidence } from './evidence.ts';

/** Clocks and polling: an alert up to this much before the threshold moment is not premature. */
export const PREMATURE_TOLERANCE_MS = 1_000;
/** A monitor sees the end of a transaction one poll late: alerts this soon after it are fine. */
export const AFTER_END_GRACE_MS = 3_000;
/** The monitor may see a few more records behind the transaction than the grader's last sample. */
const LAG_SLACK = 10;

export interface AlertSeen {
  /** When the broker appended it (LogAppendTime), ms since the run started. */
  atMs: number;
  offset: number;
  value: string | null;
}

export interface Alert {
  transactionalId: string;
  topic: string;
  partition: number;
  blockedLag: number;
}

export interface HangIncident {
  n: number;
  transactionalId: string;
  partition: number;
  /** When the grader opened it (ms since start), and the offset of its first record (the LSO while open). */
  openedAtMs: number;
  offset: number;
  /** openedAt + HANG_SECONDS: from here on it must be reported (its blocked lag is above the threshold by then). */
  qualifiesAtMs: number;
  /** qualifiesAt + reportWithinSeconds. */
  deadlineMs: number;
  /** When the grader fenced it; null if it never ended during the run. */
  endedAtMs: number | null;
  /** HWM - LSO on its partition at qualifiesAt, and the most seen while it was open. */
  lagAtQualify: number | null;
  maxLag: number;
  /** False when the grader could not make it block readers as planned (then the grade is inconclusive). */
  created: boolean;
  problem?: string;
  /** What the coordinator's log showed about it, for the evidence. */
  coordinator?: string;
}

export interface LookAlike {
  transactionalId: string;
  /** Why an alert about it is false, e.g. "a slow but healthy transaction: committed after 2.6 s". */
  why: string;
}

export interface MonitorJudgeInput {
  watchTopic: string;
  threshold: number;
  hangSeconds: number;
  reportWithinSeconds: number;
  incidents: HangIncident[];
  lookAlikes: LookAlike[];
  alerts: AlertSeen[];
  /** One line on the traps the monitor stayed quiet through, for a passing no-false-alarms. */
  quietSummary: string;
}

export interface MonitorJudgement {
  checks: Map<CheckName, CheckResult>;
  /** The first good alert per incident number. */
  reported: Map<number, AlertSeen>;
}

const secs = (ms: number) => `+${(ms / 1000).toFixed(1)} s`;
const cut = (s: string, max = 160) => (s.length > max ? `${s.slice(0, max)}…` : s);

/** An alert record's value, or why it is not one. Numbers may come as numeric strings (kafkajs offsets are strings). */
export function parseAlert(value: string | null): { alert: Alert } | { problem: string } {
  if (value === null) return { problem: 'the record has no value' };
  let data: unknown;
  try {
    data = JSON.parse(value);
  } catch {
    return { problem: 'the value is not JSON' };
  }
  if (!data || typeof data !== 'object' || Array.isArray(data)) return { problem: 'the value is not a JSON object' };
  const o = data as Record<string, unknown>;
  const num = (v: unknown) => (typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN);
  const missing = ['transactionalId', 'topic', 'partition', 'blockedLag'].filter((k) => o[k] === undefined || o[k] === null);
  if (missing.length) return { problem: `missing ${missing.join(', ')}` };
  if (typeof o.transactionalId !== 'string' || typeof o.topic !== 'string') return { problem: 'transactionalId and topic must be strings' };
  const partition = num(o.partition);
  const blockedLag = num(o.blockedLag);
  if (!Number.isInteger(partition) || !Number.isFinite(blockedLag)) return { problem: 'partition and blockedLag must be numbers' };
  return { alert: { transactionalId: o.transactionalId, topic: o.topic, partition, blockedLag } };
}

function check(name: CheckName, failures: string[], okSummary: string, failSummary: string, okEvidence: string[] = []): CheckResult {
  const lines = failures.length ? failures : okEvidence;
  return {
    name,
    passed: failures.length === 0,
    summary: failures.length ? failSummary : okSummary,
    evidence: capEvidence(lines),
  };
}

export function checkMonitorAlerts(input: MonitorJudgeInput): MonitorJudgement {
  const { incidents, threshold, watchTopic } = input;
  const parsed = input.alerts.map((seen) => ({ seen, ...parseAlert(seen.value) }));
  const show = (seen: AlertSeen) => `alert at ${secs(seen.atMs)} (offset ${seen.offset}): ${cut(seen.value ?? 'null')}`;
  const lookAlike = new Map(input.lookAlikes.map((l) => [l.transactionalId, l]));
  const byId = new Map(incidents.map((i) => [i.transactionalId, i]));
  const window = (i: HangIncident) => ({ from: i.qualifiesAtMs - PREMATURE_TOLERANCE_MS, to: (i.endedAtMs ?? Infinity) + AFTER_END_GRACE_MS });

  // ---- hanging-transaction-reported ---------------------------------------------------------
  const reported = new Map<number, AlertSeen>();
  const missed: string[] = [];
  const found: string[] = [];
  for (const incident of incidents) {
    const upper = incident.maxLag + LAG_SLACK;
    const lagNote = `blocked lag ${incident.lagAtQualify ?? '?'} at ${secs(incident.qualifiesAtMs)}, at most ${incident.maxLag}`;
    const what = `hanging transaction ${incident.n}: ${incident.transactionalId} left open on WATCH_TOPIC partition ${incident.partition} at offset ${incident.offset} at ${secs(incident.openedAtMs)}`;
    const verdicts: string[] = [];
    let good: AlertSeen | undefined;
    for (const a of parsed) {
      if (!('alert' in a)) continue;
      const { alert, seen } = a;
      const aboutIt = alert.transactionalId === incident.transactionalId;
      const samePlace = alert.topic === watchTopic && alert.partition === incident.partition;
      const inWindow = seen.atMs >= window(incident).from && seen.atMs <= window(incident).to;
      if (!aboutIt && !(samePlace && inWindow)) continue;
      const wrong: string[] = [];
      if (!aboutIt) wrong.push(`names "${alert.transactionalId}", not the transactional id (${incident.transactionalId})`);
      if (alert.topic !== watchTopic) wrong.push(`topic "${alert.topic}" is not WATCH_TOPIC`);
      else if (alert.partition !== incident.partition) wrong.push(`partition ${alert.partition}, but it blocks partition ${incident.partition}`);
      if (alert.blockedLag < threshold) wrong.push(`blockedLag ${alert.blockedLag} is below BLOCKED_LAG_THRESHOLD ${threshold}`);
      else if (alert.blockedLag > upper) wrong.push(`blockedLag ${alert.blockedLag}, but no more than ${incident.maxLag} offsets were ever behind it`);
      if (seen.atMs < window(incident).from) wrong.push(`too early: it was open only ${((seen.atMs - incident.openedAtMs) / 1000).toFixed(1)} s (HANG_SECONDS is ${input.hangSeconds})`);
      else if (seen.atMs > incident.deadlineMs) wrong.push(`too late: due by ${secs(incident.deadlineMs)}`);
      if (!wrong.length && !good) good = seen;
      else if (wrong.length) verdicts.push(`${show(seen)} — ${wrong.join('; ')}`);
    }
    if (good) {
      reported.set(incident.n, good);
      found.push(`${what}; due from ${secs(incident.qualifiesAtMs)} (${lagNote}) to ${secs(incident.deadlineMs)}; reported by the ${show(good)}`);
      if (incident.coordinator) found.push(`  coordinator: ${incident.coordinator}`);
    } else {
      missed.push(
        `${what}: expected between ${secs(incident.qualifiesAtMs)} and ${secs(incident.deadlineMs)} an alert naming ${incident.transactionalId} on WATCH_TOPIC partition ${incident.partition} with blockedLag >= ${threshold} (${lagNote})`,
      );
      if (incident.coordinator) missed.push(`  coordinator: ${incident.coordinator}`);
      missed.push(...(verdicts.length ? verdicts.slice(0, 5).map((v) => `  seen: ${v}`) : ['  seen: no alert about it at all']));
    }
  }
  const reportedCheck = check(
    'hanging-transaction-reported',
    missed,
    `all ${incidents.length} hanging transactions were reported with their transactional id and blocked lag in time`,
    `${incidents.length - reported.size} of ${incidents.length} hanging transactions were not reported as required`,
    found,
  );

  // ---- no-false-alarms --------------------------------------------------------------------
  const falseAlarms: string[] = [];
  for (const a of parsed) {
    if (!('alert' in a)) {
      falseAlarms.push(`${show(a.seen)} — unreadable: ${a.problem} (expected JSON {"transactionalId","topic","partition","blockedLag"})`);
      continue;
    }
    const { alert, seen } = a;
    const incident = byId.get(alert.transactionalId);
    if (incident) {
      if (seen.atMs < window(incident).from) {
        falseAlarms.push(`${show(seen)} — premature: ${incident.transactionalId} had been open ${((seen.atMs - incident.openedAtMs) / 1000).toFixed(1)} s, less than HANG_SECONDS (${input.hangSeconds})`);
      } else if (seen.atMs > window(incident).to) {
        falseAlarms.push(`${show(seen)} — stale: ${incident.transactionalId} was fenced and aborted at ${secs(incident.endedAtMs!)}`);
      }
      continue;
    }
    const known = lookAlike.get(alert.transactionalId);
    if (known) {
      falseAlarms.push(`${show(seen)} — ${known.transactionalId} is ${known.why}`);
      continue;
    }
    if (alert.topic !== watchTopic) {
      falseAlarms.push(`${show(seen)} — not about WATCH_TOPIC (${watchTopic})`);
      continue;
    }
    // An unknown id at the very partition and time of a hang is a true alarm with a wrong name
    // (hanging-transaction-reported says so); anywhere else it is noise.
    const during = incidents.some((i) => i.partition === alert.partition && seen.atMs >= window(i).from && seen.atMs <= window(i).to);
    if (!during) falseAlarms.push(`${show(seen)} — no transaction was hanging on partition ${alert.partition} then`);
  }
  const alarmsCheck = check(
    'no-false-alarms',
    falseAlarms,
    parsed.length ? `all ${parsed.length} alerts were about the hanging transactions; ${input.quietSummary}` : `no alerts, so no false ones; ${input.quietSummary}`,
    `${falseAlarms.length} of ${parsed.length} alerts were false alarms`,
    [`quiet through: ${input.quietSummary}`],
  );

  return { checks: new Map([['hanging-transaction-reported', reportedCheck], ['no-false-alarms', alarmsCheck]]), reported };
}
