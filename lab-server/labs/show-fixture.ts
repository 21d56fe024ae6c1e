/**
 * `kafkaiq show <lab> <fixture>`: a fixture's program as graded (solution, starter,
 * solution.<client>, broken/<name>) and, for a broken variant, its difference from the solution
 * it is made from: what the mistake is, in the lines it changes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createTwoFilesPatch } from 'diff';
import { KafkaIqError } from '../../src/shared/errors.ts';
import { loadLab, type BrokenVariant } from './load-lab.ts';

export interface ShownFixture {
  program: string;
  /** A unified diff from the solution (for a broken variant), or null. */
  diff: string | null;
  /** Where the program comes from, in words. */
  about: string;
}

export async function showFixture(labId: string, fixture: string): Promise<ShownFixture> {
  const lab = await loadLab(labId);
  const inLab = (name: string) => path.join(lab.dir, name);
  if (/^(solution|starter)(\.[a-z]+)?$/.test(fixture) && fs.existsSync(inLab(`${fixture}.ts`))) {
    return { program: fs.readFileSync(inLab(`${fixture}.ts`), 'utf8'), diff: null, about: `labs/${labId}/${fixture}.ts` };
  }
  const variant = lab.broken.find((b) => `broken/${b.name}` === fixture);
  if (!variant) {
    const known = ['solution', 'starter', ...Object.keys(lab.clients).map((c) => `solution.${c}`), ...lab.broken.map((b) => `broken/${b.name}`)];
    throw new KafkaIqError('INVALID_INPUT', `Lab ${labId} has no fixture "${fixture}": one of ${known.join(', ')}.`);
  }
  const base = variant.base ?? 'solution.ts';
  const diff = createTwoFilesPatch(base, `${fixture} (as graded)`, fs.readFileSync(inLab(base), 'utf8'), variant.source, undefined, undefined, { context: 3 })
    .split('\n')
    .filter((line) => !line.startsWith('===='))
    .join('\n');
  const about = variant.base ? `labs/${labId}/${path.relative(lab.dir, variant.file)}: ${base} with one named mistake` : `labs/${labId}/${path.relative(lab.dir, variant.file)}: a whole program`;
  return { program: variant.source, diff, about };
}

/**
 * A lab's broken variants for `kafkaiq labs`: each one's check and what its mistake is, and with
 * `edits` a mistake's hunks as its .diff declares them.
 */
export function formatKnownMistakes(broken: readonly BrokenVariant[], options: { edits: boolean }): string {
  const lines = [`Known mistakes (${broken.length}):`];
  for (const variant of broken) {
    lines.push(`  broken/${variant.name} must fail ${variant.expectFail}${variant.edits === null ? ' (a whole program)' : ''}: ${variant.about}${variant.fullPlan ? ` Graded on the full plan: ${variant.fullPlan}` : ''}`);
    if (options.edits && variant.edits !== null) lines.push(...variant.edits.split('\n').map((l) => `      ${l}`));
  }
  return `${lines.join('\n')}\n`;
}
