/** no-false-alarms: the monitor raised no alert about a transaction that was not hanging. */
import type { Checker } from './contract.ts';
import { monitorJudgement } from './monitor-findings.ts';

export const noFalseAlarms: Checker = (collected, history) => monitorJudgement(collected, history)?.checks.get('no-false-alarms') ?? null;
