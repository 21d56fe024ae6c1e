/**
 * Why a pipeline grade whose checks all held proves nothing, in the order a learner should hear
 * it: an owed fault that never hit its point, work the time limit cut off, no fault inside a
 * transaction. Pure: collect.ts gathers the facts.
 */
export interface InconclusiveFacts {
  /** The fault obligations' message (fault-obligations.ts), or null when every owed fault landed. */
  owed: string | null;
  /** What the program had not finished when the time limit ended the grade (play.ts), or null. */
  unfinished: string | null;
  /** Whether a fault landed inside a transaction that carried records (or aborted output exists). */
  faultInTransaction: boolean;
  /** A sentence about decoy transactions, or ''. */
  decoyNote: string;
}

export function pipelineInconclusive(facts: InconclusiveFacts): string | null {
  if (facts.owed) return facts.owed;
  // Work left for after the time limit is work nobody judged: a program cannot pass by never finishing it.
  if (facts.unfinished) {
    return (
      `All checks held, but the time limit ended the grade before your program had finished (${facts.unfinished}): what it still had to do was never judged. ` +
      'Grade again; if it runs out of time on every seed, look at the timeline for where it waits.'
    );
  }
  if (!facts.faultInTransaction) return `All checks held, but no fault landed inside an open transaction, so exactly-once was not really tested: grade again (another seed).${facts.decoyNote}`;
  return null;
}
