import { fileURLToPath } from 'node:url';
import path from 'node:path';

/** The project root, wherever the checkout lives. */
export const ROOT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BROKER_DIR = path.join(ROOT_DIR, 'broker');
export const BROKER_LIB_DIR = path.join(BROKER_DIR, 'lib');
export const LABS_DIR = path.join(ROOT_DIR, 'labs');
/** Everything the product writes at run time lives under one ignored folder. */
export const STATE_DIR = process.env.KAFKAIQ_STATE_DIR ?? path.join(ROOT_DIR, '.kafkaiq');

/** Shows a path to a person without leaking where the server keeps its files. */
export function displayPath(p: string): string {
  const rel = path.relative(ROOT_DIR, p);
  return rel.startsWith('..') ? p : rel;
}
