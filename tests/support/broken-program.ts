/** A lab's broken variant as graded (a whole program, or its solution with the mistake applied), for tests that grade one directly. */
import fs from 'node:fs';
import path from 'node:path';
import { LABS_DIR } from '../../lab-server/core/paths.ts';
import { loadBrokenVariants } from '../../lab-server/labs/load-lab.ts';
import { applyMistake, parseMistake } from '../../src/shared/mistake.ts';

export function brokenProgram(lab: string, name: string): string {
  const variant = loadBrokenVariants(lab, path.join(LABS_DIR, lab)).find((b) => b.name === name);
  if (!variant) throw new Error(`labs/${lab}/broken/ has no variant ${name}`);
  return variant.source;
}

/** The first variant with the other mistakes (broken/<name>.diff) made to it too: a program with several bugs at once. */
export function withMistakes(lab: string, first: string, ...more: string[]): string {
  return more.reduce((program, name) => {
    const file = path.join(LABS_DIR, lab, 'broken', `${name}.diff`);
    return applyMistake(parseMistake(fs.readFileSync(file, 'utf8'), file), program, file);
  }, brokenProgram(lab, first));
}
