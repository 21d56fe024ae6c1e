import fs from 'node:fs';
import path from 'node:path';
import { labIdSchema } from '../../src/shared/lab.ts';
import { parseWithFriendlyErrors } from '../../src/shared/validate.ts';
import { KafkaIqError } from '../../src/shared/errors.ts';
import { LABS_DIR, ROOT_DIR } from '../core/paths.ts';
import { loadBrokenVariants } from './load-lab.ts';

const TEMPLATE_DIR = path.join(ROOT_DIR, 'lab-server/labs/template');

/** The programs a new lab starts from: the `copy` lab's, which pass and fail as they should. */
const STARTING_POINT = path.join(LABS_DIR, 'copy');
const COPIED = ['solution.ts', 'starter.ts', 'hints.md'];

/**
 * `kafkaiq new <id>`: a lab folder that passes `kafkaiq check` before the author changes anything:
 * a template lab.ts plus the copy lab's programs.
 */
export function scaffoldLab(id: string): string {
  parseWithFriendlyErrors(labIdSchema, id, 'Lab id');
  const dir = path.join(LABS_DIR, id);
  if (fs.existsSync(dir)) throw new KafkaIqError('INVALID_INPUT', `labs/${id} already exists: pick another id or edit it.`);
  fs.mkdirSync(path.join(dir, 'broken'), { recursive: true });
  fs.copyFileSync(path.join(TEMPLATE_DIR, 'lab.ts'), path.join(dir, 'lab.ts'));
  // Every broken variant of copy: together they fail each of its checks (the coverage rule). A
  // mistake (.diff) follows the new lab's solution.ts when the author changes it; one made to
  // another client's solution is left out, as that solution is.
  const broken = loadBrokenVariants('copy', STARTING_POINT)
    .filter((b) => b.base === null || b.base === 'solution.ts')
    .map((b) => path.basename(b.file));
  for (const file of [...COPIED, ...broken.map((f) => `broken/${f}`)]) fs.copyFileSync(path.join(STARTING_POINT, file), path.join(dir, file));
  return dir;
}
