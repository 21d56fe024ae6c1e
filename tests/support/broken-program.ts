/** A lab's broken variant as graded (a whole program, or its solution with the mistake applied), for tests that grade one directly. */
import path from 'node:path';
import { LABS_DIR } from '../../lab-server/core/paths.ts';
import { loadBrokenVariants } from '../../lab-server/labs/load-lab.ts';

export function brokenProgram(lab: string, name: string): string {
  const variant = loadBrokenVariants(lab, path.join(LABS_DIR, lab)).find((b) => b.name === name);
  if (!variant) throw new Error(`labs/${lab}/broken/ has no variant ${name}`);
  return variant.source;
}
