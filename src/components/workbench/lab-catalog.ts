/**
 * BUILD TIME ONLY (imported from Lab.astro's frontmatter): turns labs/<id>/ into the payload the
 * workbench island needs. Vite's import.meta.glob pulls every lab in at build time, so a lesson
 * that names an unknown or broken lab fails the build instead of shipping a dead workbench.
 */
import type { MarkdownInstance } from 'astro';
import { KafkaIqError } from '../../shared/errors.ts';
import { labDefinitionSchema, labInfoSchema, type LabInfo } from '../../shared/lab.ts';
import { parseWithFriendlyErrors } from '../../shared/validate.ts';
import type { WorkbenchPayload } from './payload.ts';
import planned from '../../../labs/planned.json';
import genericPlatformaticStarter from './platformatic-starter.ts.txt?raw';

const definitions = import.meta.glob<{ default: unknown }>('/labs/*/lab.ts', { eager: true });
const starters = import.meta.glob<string>('/labs/*/starter.ts', { query: '?raw', import: 'default', eager: true });
const hintsSource = import.meta.glob<string>('/labs/*/hints.md', { query: '?raw', import: 'default', eager: true });
const hintsRendered = import.meta.glob<MarkdownInstance<Record<string, unknown>>>('/labs/*/hints.md', { eager: true });
// @platformatic/kafka's files of a lab (src/shared/clients.ts names them).
const platformaticStarters = import.meta.glob<string>('/labs/*/starter.platformatic.ts', { query: '?raw', import: 'default', eager: true });
const platformaticSolutions = import.meta.glob<string>('/labs/*/solution.platformatic.ts', { query: '?raw', import: 'default', eager: true });
const platformaticHintsSource = import.meta.glob<string>('/labs/*/hints.platformatic.md', { query: '?raw', import: 'default', eager: true });
const platformaticHintsRendered = import.meta.glob<MarkdownInstance<Record<string, unknown>>>('/labs/*/hints.platformatic.md', { eager: true });

const labFile = (id: string, file: string) => `/labs/${id}/${file}`;

export function knownLabIds(): string[] {
  return Object.keys(definitions)
    .map((key) => key.split('/')[2] ?? '')
    .sort();
}

/**
 * Lessons may be written before their labs: ids listed in labs/planned.json render a "lab in
 * preparation" box. Any other unknown id is a typo and fails the build.
 */
export const PLANNED_LAB_IDS: readonly string[] = planned.labs;

/**
 * @param where names the page that asked, for the error message.
 * @returns null for a planned lab that does not exist yet.
 */
export async function loadWorkbenchPayload(id: string, where: string): Promise<WorkbenchPayload | null> {
  const module = definitions[labFile(id, 'lab.ts')];
  if (module && PLANNED_LAB_IDS.includes(id)) {
    throw new KafkaIqError('LAB_INVALID', `Lab "${id}" exists now: remove it from labs/planned.json`);
  }
  if (!module) {
    if (PLANNED_LAB_IDS.includes(id)) return null;
    const known = knownLabIds();
    throw new KafkaIqError(
      'LAB_NOT_FOUND',
      `<Lab id="${id}"> on ${where}: there is no labs/${id}/lab.ts (known labs: ${known.length ? known.join(', ') : 'none yet'}). Fix the id, or list it in labs/planned.json while the lab is being written`,
    );
  }
  const definition = parseWithFriendlyErrors(labDefinitionSchema, module.default, `Invalid lab "${id}" (labs/${id}/lab.ts)`, 'LAB_INVALID');
  const starter = starters[labFile(id, 'starter.ts')];
  if (starter === undefined) throw new KafkaIqError('LAB_INVALID', `Lab "${id}" has no starter program: add labs/${id}/starter.ts`);

  const info: LabInfo = parseWithFriendlyErrors(
    labInfoSchema,
    {
      id,
      title: definition.title,
      summary: definition.summary,
      env: definition.env,
      starter,
      // A lab without hints.md simply offers no hints.
      hints: hintsSource[labFile(id, 'hints.md')] ?? '',
      clients: {
        platformatic: {
          // A lab without its own starter in this client gets a skeleton that reads the env contract.
          starter: platformaticStarters[labFile(id, 'starter.platformatic.ts')] ?? genericPlatformaticStarter,
          hints: platformaticHintsSource[labFile(id, 'hints.platformatic.md')] ?? '',
          reference: platformaticSolutions[labFile(id, 'solution.platformatic.ts')] !== undefined,
        },
      },
      kafkajs: definition.kafkajs,
      checks: definition.checks,
    },
    `Lab "${id}" for the browser`,
    'LAB_INVALID',
  );
  const rendered = hintsRendered[labFile(id, 'hints.md')];
  const renderedPlatformatic = platformaticHintsRendered[labFile(id, 'hints.platformatic.md')];
  return {
    info,
    hintsHtml: rendered ? await rendered.compiledContent() : '',
    clientHintsHtml: renderedPlatformatic ? { platformatic: await renderedPlatformatic.compiledContent() } : {},
  };
}

/** JSON that is safe inside <script type="application/json">: no `</script>` can close it early. */
export function payloadJson(payload: WorkbenchPayload): string {
  return JSON.stringify(payload).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
}
