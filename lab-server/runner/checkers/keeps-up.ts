/**
 * keeps-up: a liveness check. Fails when the program stopped making progress for longer than the
 * bound while input was waiting and nothing held it back (see pipeline/stall-watch.ts), with the
 * evidence a learner needs to find the wedge: when, how much input waited, the last call each
 * instance made and what it printed. A pure function of what the watch recorded.
 */
import type { CheckResult } from '../../../src/shared/report.ts';
import type { Stall } from '../pipeline/stall-watch.ts';
import type { Checker } from './contract.ts';
import { capEvidence } from './evidence.ts';

const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** longestEndMs: when the longest pause ended, so a pause near the bound can be found in the timeline. */
export function checkKeepsUp(stalls: readonly Stall[], boundMs: number, longestMs: number, longestEndMs?: number): CheckResult {
  if (!stalls.length) {
    const when = longestEndMs !== undefined && longestMs >= 1_000 ? `, until +${secs(longestEndMs)}` : '';
    return {
      name: 'keeps-up',
      passed: true,
      summary: `the program kept up: its longest pause with input waiting and nothing holding it was ${secs(longestMs)}${when} (a stall is over ${secs(boundMs)})`,
      evidence: [],
    };
  }
  const evidence = stalls.flatMap((s) => [
    `no progress from +${secs(s.fromMs)} to +${secs(s.toMs)} (${secs(s.toMs - s.fromMs)}) with ${s.waiting} committed inputs waiting; no broker downtime, paused instance or pending rebalance held it`,
    ...s.lastCalls.map((c) => `  ${c}`),
    ...s.lastLines.map((l) => `  printed: ${l}`),
  ]);
  return {
    name: 'keeps-up',
    passed: false,
    summary: `the program stalled ${stalls.length === 1 ? 'once' : `${stalls.length} times`} for more than ${secs(boundMs)} while input was waiting (longest ${secs(longestMs)}): is it stuck after an error, e.g. a transaction that was never aborted?`,
    evidence: capEvidence(evidence),
  };
}

export const keepsUp: Checker = (collected, history) => {
  if (!collected.pipeline) return null;
  const { stalls, boundMs, longestMs, longestEndMs } = history.stalls;
  return checkKeepsUp(stalls, boundMs, longestMs, longestEndMs);
};
