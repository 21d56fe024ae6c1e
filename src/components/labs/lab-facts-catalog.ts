/**
 * BUILD TIME ONLY (imported from src/pages/labs.astro): the facts of every lab in labs/, read the
 * way lab-catalog.ts reads them for the workbench (Vite's import.meta.glob), with the first line
 * of each broken variant (a whole program or a mistake made to a solution) for the coverage of its checks. A lab that does not load fails the build.
 */
import { KafkaIqError } from '../../shared/errors.ts';
import { labDefinitionSchema } from '../../shared/lab.ts';
import { declaredFixtures, parseExpectFail } from '../../shared/lab-coverage.ts';
import { labFacts, type LabFacts } from '../../shared/lab-facts.ts';
import { describeVariant } from '../../shared/mistake.ts';
import { parseWithFriendlyErrors } from '../../shared/validate.ts';

const definitions = import.meta.glob<{ default: unknown }>('/labs/*/lab.ts', { eager: true });
const brokenSources = import.meta.glob<string>(['/labs/*/broken/*.ts', '/labs/*/broken/*.diff'], { query: '?raw', import: 'default', eager: true });

export function allLabFacts(): LabFacts[] {
  return Object.entries(definitions)
    .map(([file, module]) => {
      const id = file.split('/')[2] ?? '';
      const definition = parseWithFriendlyErrors(labDefinitionSchema, module.default, `Invalid lab "${id}" (labs/${id}/lab.ts)`, 'LAB_INVALID');
      const broken = Object.entries(brokenSources)
        .filter(([path]) => path.startsWith(`/labs/${id}/broken/`))
        .map(([path, source]) => {
          const file = path.slice(`/labs/${id}/broken/`.length);
          const name = file.replace(/\.(ts|diff)$/, '');
          // A .diff variant's first line names its check as a whole-file variant's does (src/shared/mistake.ts).
          const expectFail = parseExpectFail(source);
          if (!expectFail) throw new KafkaIqError('LAB_INVALID', `labs/${id}/broken/${file} must start with '// expect-fail: <check>'`);
          return { name, expectFail };
        })
        .sort((a, b) => a.name.localeCompare(b.name));
      return labFacts(id, definition, declaredFixtures(definition, broken));
    })
    .sort((a, b) => a.id.localeCompare(b.id));
}

/** One broken variant as the Labs page shows it: the check it fails, what the mistake is, and its edits. */
export interface KnownMistake {
  program: string;
  check: string;
  /** The variant's comment lines after `expect-fail`, as prose. */
  about: string;
  /** A mistake's hunks (`@@` on), or null for a whole-program variant. */
  edits: string | null;
  /** Why only the full plan catches it (its `// full-plan:` line), or null. */
  fullPlan: string | null;
}

/** Every lab's broken variants, by lab id, in name order. */
export function allKnownMistakes(): Map<string, KnownMistake[]> {
  const byLab = new Map<string, KnownMistake[]>();
  for (const [path, source] of Object.entries(brokenSources).sort(([a], [b]) => a.localeCompare(b))) {
    const [, , id = '', , file = ''] = path.split('/');
    const { about, edits, fullPlan } = describeVariant(source);
    const mistake: KnownMistake = { program: `broken/${file.replace(/\.(ts|diff)$/, '')}`, check: parseExpectFail(source) ?? '', about, edits, fullPlan };
    byLab.set(id, [...(byLab.get(id) ?? []), mistake]);
  }
  return byLab;
}
