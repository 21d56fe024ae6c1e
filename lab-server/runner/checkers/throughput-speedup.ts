/**
 * throughput-speedup: decided while the grade played, by timed bursts of a baseline and the
 * learner's program before any fault (pipeline/throughput.ts); collected as it was decided.
 */
import type { Checker } from './contract.ts';

export const throughputSpeedup: Checker = (collected) => collected.pipeline?.throughput ?? null;
