/** The one cap on a check's evidence: a report stays readable, and its size bounded. */
export const MAX_EVIDENCE = 20;

/** The first MAX_EVIDENCE lines, and a last line saying how many were left out (if any). */
export function capEvidence(lines: readonly string[]): string[] {
  return lines.slice(0, MAX_EVIDENCE).concat(lines.length > MAX_EVIDENCE ? [`… and ${lines.length - MAX_EVIDENCE} more`] : []);
}
