/**
 * A small line diff for the workbench's history: an attempt's program against the editor's, as
 * unified-diff hunks (three lines of context, `-` the attempt's lines, `+` the current ones).
 * Common head and tail are cut first; the middle is a longest-common-subsequence table, bounded:
 * past MAX_CELLS (two very different long programs) the middle is shown as removed and added.
 *
 * Pure, so the browser and the tests share it.
 */

export type DiffLine = { op: ' ' | '-' | '+'; text: string };

export interface DiffHunk {
  /** 1-based first line and line count in the old text and in the new one (as `@@ -a,b +c,d @@`). */
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  lines: DiffLine[];
}

const MAX_CELLS = 4_000_000;
const CONTEXT = 3;

/** Every line of both texts, in order, marked kept, removed or added. */
export function diffLines(oldText: string, newText: string): DiffLine[] {
  const a = splitLines(oldText);
  const b = splitLines(newText);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const midA = a.slice(head, a.length - tail);
  const midB = b.slice(head, b.length - tail);
  const keep = (text: string): DiffLine => ({ op: ' ', text });
  return [...a.slice(0, head).map(keep), ...middle(midA, midB), ...a.slice(a.length - tail).map(keep)];
}

function middle(a: string[], b: string[]): DiffLine[] {
  const n = a.length;
  const m = b.length;
  if (n === 0 || m === 0 || (n + 1) * (m + 1) > MAX_CELLS) {
    return [...a.map((text): DiffLine => ({ op: '-', text })), ...b.map((text): DiffLine => ({ op: '+', text }))];
  }
  // lcs[i][j]: the longest common subsequence of a[i..] and b[j..], in one flat array.
  const width = m + 1;
  const lcs = new Uint32Array((n + 1) * width);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i * width + j] = a[i] === b[j] ? lcs[(i + 1) * width + j + 1]! + 1 : Math.max(lcs[(i + 1) * width + j]!, lcs[i * width + j + 1]!);
    }
  }
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      out.push({ op: ' ', text: a[i]! });
      i++;
      j++;
    } else if (lcs[(i + 1) * width + j]! >= lcs[i * width + j + 1]!) out.push({ op: '-', text: a[i++]! });
    else out.push({ op: '+', text: b[j++]! });
  }
  while (i < n) out.push({ op: '-', text: a[i++]! });
  while (j < m) out.push({ op: '+', text: b[j++]! });
  return out;
}

/** The changes with CONTEXT lines around each; an empty list when the texts have the same lines. */
export function diffHunks(oldText: string, newText: string, context = CONTEXT): DiffHunk[] {
  const lines = diffLines(oldText, newText);
  const hunks: DiffHunk[] = [];
  let oldLine = 1;
  let newLine = 1;
  let current: DiffHunk | null = null;
  /** Kept lines seen since the last change (they may close the hunk, or sit between two changes). */
  let pending: DiffLine[] = [];
  const numbersBefore = (k: number) => ({ old: oldLine - k, new: newLine - k });
  for (const line of lines) {
    if (line.op === ' ') {
      pending.push(line);
      if (current && pending.length > 2 * context) {
        current.lines.push(...pending.slice(0, context));
        hunks.push(close(current));
        current = null;
        pending = pending.slice(-context);
      }
      oldLine++;
      newLine++;
      continue;
    }
    if (!current) {
      const lead = pending.slice(-context);
      const start = numbersBefore(lead.length);
      current = { oldStart: start.old, oldLines: 0, newStart: start.new, newLines: 0, lines: [...lead] };
    } else current.lines.push(...pending);
    pending = [];
    current.lines.push(line);
    if (line.op === '-') oldLine++;
    else newLine++;
  }
  if (current) {
    current.lines.push(...pending.slice(0, context));
    hunks.push(close(current));
  }
  return hunks;
}

function close(hunk: DiffHunk): DiffHunk {
  hunk.oldLines = hunk.lines.filter((l) => l.op !== '+').length;
  hunk.newLines = hunk.lines.filter((l) => l.op !== '-').length;
  return hunk;
}

/** The hunks as unified-diff text lines, with `--- old` / `+++ new` headers. */
export function unifiedDiff(oldText: string, newText: string, names: { old: string; new: string }): string[] {
  const hunks = diffHunks(oldText, newText);
  if (hunks.length === 0) return [];
  const out = [`--- ${names.old}`, `+++ ${names.new}`];
  for (const h of hunks) {
    out.push(`@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@`);
    for (const l of h.lines) out.push(`${l.op}${l.text}`);
  }
  return out;
}

function splitLines(text: string): string[] {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}
