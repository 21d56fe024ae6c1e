/** hanging-transaction-reported: the monitor named every transaction the grader left hanging, in time. */
import type { Checker } from './contract.ts';
import { monitorJudgement } from './monitor-findings.ts';

export const hangingTransactionReported: Checker = (collected, history) => monitorJudgement(collected, history)?.checks.get('hanging-transaction-reported') ?? null;
