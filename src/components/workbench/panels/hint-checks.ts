/**
 * Which hint helps with which grader check. A hint names its checks itself with an HTML comment
 * in hints.md, `<!-- checks: no-duplicates offsets-consistent -->`; a hint without one is matched
 * by what it talks about: each check has the words of the mistakes that fail it (strong: the fix
 * itself, weak: the topic around it), and the hint whose text, and above all whose title, says
 * the most of them is the hint for that check.
 */

interface CheckWords {
  strong: RegExp[];
  weak: RegExp[];
}

const IDEMPOTENT_EFFECTS = [/idempoten/i, /dedup|unique|ON CONFLICT|upsert|already (applied|written|charged)/i, /Idempotency-Key|idempotency key|stable key/i];

const WORDS: Record<string, CheckWords> = {
  'no-duplicates': {
    strong: [/sendOffsets|addOffsets|sendOffsetsToTransaction/i, /offsets?\b[^.]{0,40}\b(in|inside|into|part of|with) (the|that|one|the same|same|your|its) transaction/i, /autoCommit|auto-commit|commits? (them )?itself/i],
    weak: [/fenc/i, /transactional\.?id|transactionalId/i, /duplicat/i, /zombie/i],
  },
  'no-loss': {
    strong: [/abort\(\)|abort and (retry|rethrow)|abort, then rethrow/i, /rethrow|swallow/i, /never skip|skips?\b[^.]{0,30}batch|lost|lose/i],
    weak: [/retry|restart/i, /commit\(\)/i],
  },
  'no-aborted-reads': {
    strong: [/read_?committed|readUncommitted|read committed|isolation/i],
    weak: [/aborted/i],
  },
  'transform-correct': {
    strong: [/exact (strings?|values?|format)|upper-?case|two decimals|transform/i],
    weak: [/\bvalues?\b|\bkeys?\b/i, /format/i],
  },
  'order-preserved': {
    strong: [/\border(ed|ing)?\b(?! id)/i, /maxInFlightRequests/i],
    weak: [/partition/i, /\bkeys?\b/i],
  },
  'offsets-consistent': {
    strong: [/\+ ?1|next (one|offset|record) to read|last offset/i, /committed offset/i],
    weak: [/offset/i],
  },
  'no-hanging-transactions': {
    strong: [/fenc|PRODUCER_FENCED|INVALID_PRODUCER_EPOCH/i, /hanging|transaction timeout|open transaction/i, /process\.exit|\bexit\b/i],
    weak: [/abort/i],
  },
  'keeps-up': {
    strong: [/\bidle\b|CRASH|keeps? up|never idle|stays? up|throughput/i],
    weak: [/restart|batch/i],
  },
  'no-duplicate-effects': { strong: IDEMPOTENT_EFFECTS, weak: [/duplicat|twice|again/i] },
  'effects-correct': { strong: [/exact|amount|unit price|currency|total/i], weak: IDEMPOTENT_EFFECTS },
  'no-lost-effects': { strong: [/retry|5xx|gives? up|never skip|lost/i], weak: IDEMPOTENT_EFFECTS },
  'hanging-transaction-reported': { strong: [/alert|threshold|blocker|hanging/i], weak: [/LSO|last stable offset|lag|duration/i] },
  'no-false-alarms': { strong: [/threshold|both thresholds|false alarm|only when/i], weak: [/alert|LSO|lag|duration/i] },
};

/** Checks a hint names itself (`<!-- checks: a b -->` anywhere inside it). */
export function declaredChecks(hint: Node): string[] {
  const names: string[] = [];
  const walker = document.createTreeWalker(hint, NodeFilter.SHOW_COMMENT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const match = /^\s*checks?:\s*([\w\s,-]+?)\s*$/i.exec(node.textContent ?? '');
    if (match) names.push(...match[1]!.split(/[\s,]+/).filter(Boolean));
  }
  return names;
}

/** How much a hint speaks to a check: 0 when not at all. */
export function hintScore(check: string, text: string, title: string): number {
  const words = WORDS[check];
  if (!words) return 0;
  const count = (patterns: RegExp[], inText: string) => patterns.filter((p) => p.test(inText)).length;
  return 3 * count(words.strong, text) + count(words.weak, text) + 2 * count(words.strong, title);
}
