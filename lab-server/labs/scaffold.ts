import fs from 'node:fs';
import path from 'node:path';
import { labIdSchema } from '../../src/shared/lab.ts';
import { parseWithFriendlyErrors } from '../../src/shared/validate.ts';
import { KafkaIqError } from '../core/errors.ts';
import { LABS_DIR, ROOT_DIR } from '../core/paths.ts';

const TEMPLATE_DIR = path.join(ROOT_DIR, 'lab-server/labs/template');

/** `kafkaiq new <id>`: a lab folder that passes `kafkaiq check` before the author changes anything. */
export function scaffoldLab(id: string): string {
  parseWithFriendlyErrors(labIdSchema, id, 'Lab id');
  const dir = path.join(LABS_DIR, id);
  if (fs.existsSync(dir)) throw new KafkaIqError('INVALID_INPUT', `labs/${id} already exists: pick another id or edit it.`);
  fs.cpSync(TEMPLATE_DIR, dir, { recursive: true });
  return dir;
}
