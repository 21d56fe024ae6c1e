import fs from 'node:fs';
import path from 'node:path';
import { ROOT_DIR } from '../../lab-server/core/paths.ts';

/**
 * Global setup of both test tiers: everything runs on the Node pinned in package.json (npm and
 * npx put node_modules/.bin, where that Node is installed, first on PATH).
 */
export default function checkPinnedNode() {
  const pinned = JSON.parse(fs.readFileSync(path.join(ROOT_DIR, 'package.json'), 'utf8')).optionalDependencies.node;
  if (process.version !== `v${pinned}`) {
    throw new Error(`The tests run on the pinned Node ${pinned}, not ${process.version}: start them with 'npm test' or 'npm run test:unit' (after 'npm install').`);
  }
}
