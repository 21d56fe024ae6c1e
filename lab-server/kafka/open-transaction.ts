/**
 * The broker's word on "is a transaction open right now": a partition the attempt's program
 * writes whose last stable offset is below its high watermark holds records of an open
 * transaction. The grader asks this instead of taking the program's word (a crash-point hit
 * that says "transaction open"), so a forged answer over IPC can at worst make a grade
 * inconclusive, never conclusive.
 */
import type { OffsetsProbe } from './inspect.ts';

export async function brokerSeesOpenTransaction(probe: OffsetsProbe, topics: readonly string[]): Promise<boolean | null> {
  try {
    return await probe.transactionOpen([...topics]);
  } catch {
    return null; // the broker did not say (a restart): unknown, which never counts as open
  }
}
