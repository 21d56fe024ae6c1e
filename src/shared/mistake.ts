/**
 * A broken variant declared as its lab's solution plus one named mistake (`labs/<id>/broken/<name>.diff`):
 *
 *     // expect-fail: offsets-consistent
 *     // Commits the offset of the record it processed instead of the next one to read.
 *     --- solution.ts
 *     +++ broken/off-by-one-offsets.ts
 *     @@
 *          offsets: [...]
 *     -      offset: (BigInt(last.offset) + 1n).toString(),
 *     +      offset: last.offset,
 *
 * The comment lines before `---` name the check the variant must fail and say what the mistake is;
 * `---` names the solution it changes (solution.ts, or solution.<client>.ts). Each `@@` hunk is an
 * anchored edit: its context and removed lines (' ' and '-') must occur exactly once in the
 * solution, as whole lines, and are replaced by its context and added lines (' ' and '+'). The
 * numbers after `@@` are ignored: the anchor is the text, so a solution edit elsewhere leaves the
 * variant as it was, and one that touches its anchor is a load error naming the variant and hunk.
 * `diff -u solution.ts program.ts` writes one; `npx kafkaiq show <lab> broken/<name>` prints the
 * program as graded.
 *
 * Pure: no I/O (the lab loader and the site's Labs page both use it).
 */
import { KafkaIqError } from './errors.ts';

export interface Hunk {
  /** The hunk's position in the file, 1-based, for errors. */
  n: number;
  /** The solution's lines the hunk replaces (its context and removed lines). */
  anchor: string[];
  /** What takes their place (its context and added lines). */
  replacement: string[];
}

export interface Mistake {
  /** The comment lines before `---`: `// expect-fail: <check>`, then what the mistake is. */
  header: string[];
  /** The solution file the mistake changes (its name in the lab's folder). */
  base: string;
  hunks: Hunk[];
}

const BASE_FILE = /^solution(\.[a-z]+)?\.ts$/;

const invalid = (where: string, why: string) => new KafkaIqError('LAB_INVALID', `${where}: ${why}`);

/** Reads a `.diff` variant; `where` names it in errors (labs/<id>/broken/<name>.diff). */
export function parseMistake(text: string, where: string): Mistake {
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  if (lines.at(-1) === '') lines.pop();
  const header: string[] = [];
  let i = 0;
  for (; i < lines.length && !lines[i]!.startsWith('--- '); i++) {
    const line = lines[i]!;
    if (line.startsWith('//')) header.push(line);
    else if (line.trim() !== '') throw invalid(where, `line ${i + 1}: before '--- <solution file>' only '//' comment lines may come (what the mistake is), found "${line.slice(0, 60)}"`);
  }
  if (i === lines.length) throw invalid(where, "has no '--- solution.ts' line: a mistake names the solution it changes");
  const base = lines[i]!.slice(4).trim().split(/\s/)[0]!;
  if (!BASE_FILE.test(base)) throw invalid(where, `'--- ${base}': a mistake changes the lab's solution.ts or a solution.<client>.ts`);
  i++;
  if (!lines[i]?.startsWith('+++ ')) throw invalid(where, `line ${i + 1}: '+++ broken/<name>.ts' must follow '--- ${base}'`);
  i++;
  const hunks: Hunk[] = [];
  let hunk: Hunk | null = null;
  for (; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith('@@')) {
      hunk = { n: hunks.length + 1, anchor: [], replacement: [] };
      hunks.push(hunk);
      continue;
    }
    if (!hunk) throw invalid(where, `line ${i + 1}: an edit starts with '@@'`);
    // `\ No newline at end of file`: the solution's last line is matched without one all the same.
    if (line.startsWith('\\')) continue;
    const [mark, rest] = [line[0], line.slice(1)];
    if (mark === ' ' || line === '') (hunk.anchor.push(rest), hunk.replacement.push(rest));
    else if (mark === '-') hunk.anchor.push(rest);
    else if (mark === '+') hunk.replacement.push(rest);
    else throw invalid(where, `line ${i + 1}: a line of hunk ${hunk.n} starts with ' ', '-' or '+', found "${line.slice(0, 60)}"`);
  }
  if (!hunks.length) throw invalid(where, 'has no @@ hunk: a mistake changes something');
  for (const h of hunks) {
    if (!h.anchor.some((l) => l.trim() !== '')) throw invalid(where, `hunk ${h.n} has no anchor: give it at least one unchanged or removed line of the solution`);
    if (h.anchor.join('\n') === h.replacement.join('\n')) throw invalid(where, `hunk ${h.n} changes nothing`);
  }
  if (!header.length) throw invalid(where, "must start with '// expect-fail: <check>'");
  return { header, base, hunks };
}

/** Every line index at which `anchor` occurs as whole consecutive lines of `lines`. */
function occurrences(lines: readonly string[], anchor: readonly string[]): number[] {
  const found: number[] = [];
  for (let at = 0; at + anchor.length <= lines.length; at++) {
    let k = 0;
    while (k < anchor.length && lines[at + k] === anchor[k]) k++;
    if (k === anchor.length) found.push(at);
  }
  return found;
}

/** The program as graded: the mistake's comment lines, then its solution with each hunk applied. */
export function applyMistake(mistake: Mistake, solution: string, where: string): string {
  const lines = solution.replace(/\r\n/g, '\n').split('\n');
  const trailingNewline = lines.at(-1) === '';
  if (trailingNewline) lines.pop();
  const edits = mistake.hunks.map((hunk) => {
    const at = occurrences(lines, hunk.anchor);
    const first = hunk.anchor.find((l) => l.trim() !== '')!.trim().slice(0, 60);
    if (at.length !== 1) {
      throw invalid(
        where,
        at.length === 0
          ? `hunk ${hunk.n} (from "${first}") no longer matches ${mistake.base}: the solution changed there; redo the mistake on the new solution`
          : `hunk ${hunk.n} (from "${first}") matches ${mistake.base} ${at.length} times: add context lines until it matches once`,
      );
    }
    return { hunk, at: at[0]! };
  });
  edits.sort((a, b) => a.at - b.at);
  for (let k = 1; k < edits.length; k++) {
    if (edits[k]!.at < edits[k - 1]!.at + edits[k - 1]!.hunk.anchor.length) throw invalid(where, `hunks ${edits[k - 1]!.hunk.n} and ${edits[k]!.hunk.n} overlap in ${mistake.base}`);
  }
  for (const { hunk, at } of edits.reverse()) lines.splice(at, hunk.anchor.length, ...hunk.replacement);
  return [...mistake.header, ...lines].join('\n') + (trailingNewline ? '\n' : '');
}

/** What a broken variant's file says of itself, whole program (.ts) or mistake (.diff). */
export interface VariantDescription {
  /** Its opening `//` lines: `// expect-fail: <check>`, then what the mistake is. */
  comments: string[];
  /** Those lines after expect-fail, as prose (without a full-plan line). */
  about: string;
  /**
   * Why the lab's quick plan cannot catch it, from a `// full-plan: <why>` line: such a variant is
   * always graded on the full plan. null: the quick plan catches it on every seed.
   */
  fullPlan: string | null;
  /** A mistake's hunks (from the first `@@` on), or null for a whole program. */
  edits: string | null;
}

const FULL_PLAN = /^\/\/ full-plan: (\S.*)$/;

export function describeVariant(text: string): VariantDescription {
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  const end = lines.findIndex((l) => !l.startsWith('//'));
  const comments = lines.slice(0, end === -1 ? lines.length : end);
  const hunksFrom = lines.findIndex((l) => l.startsWith('@@'));
  const isMistake = lines.some((l) => l.startsWith('--- ')) && hunksFrom >= 0;
  const fullPlanLine = comments.find((l) => FULL_PLAN.test(l));
  return {
    comments,
    about: comments.slice(1).filter((l) => l !== fullPlanLine).map((l) => l.replace(/^\/\/ ?/, '')).join(' ').trim(),
    fullPlan: fullPlanLine ? FULL_PLAN.exec(fullPlanLine)![1]!.trim() : null,
    edits: isMistake ? lines.slice(hunksFrom).join('\n').trimEnd() : null,
  };
}
