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

/**
 * V8 flags of every KafkaIQ process that grades (the lab server, the CLI, the benches, the test
 * workers): the old generation starts at 64 MB. A grader relays each program's connections; with
 * V8's default start the live heap is about 18 MB and its limit grows by little, so a steady flow
 * of relayed bytes ran a full mark-compact every ~50 ms and doubled the relay's CPU per request
 * (`npm run bench:relay`). Not for learner programs: they run with flags of their own.
 */
export const SERVER_V8_FLAGS = ['--initial-old-space-size=64'];
