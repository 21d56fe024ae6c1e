// The pinned Node runtime as package.json states it, and where the `node` package installs it.
// No side effects: read by pinned-node.mjs (every entry point) and check-install.mjs (postinstall).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));

/** The pinned version, e.g. "26.10.0" (exact; an optional dependency, see README). */
export const PINNED_NODE_VERSION = manifest.optionalDependencies.node;
/** The binary the `node` package installs. */
export const PINNED_NODE_BINARY = path.join(ROOT, 'node_modules', 'node', 'bin', process.platform === 'win32' ? 'node.exe' : 'node');
