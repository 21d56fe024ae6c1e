// The Node runtime KafkaIQ runs on is pinned in package.json (the `node` package from the npm
// registry installs it into node_modules/.bin/node). npm scripts and npx put that folder first on
// PATH, so they run it; this module, loaded first by every entry point, makes sure of it: run from
// any other Node (`node bin/kafkaiq.mjs ...` with the host's Node 20, say), it starts the same
// command again on the pinned runtime, or stops with one line saying how to install it. The same
// when the server's V8 flags are missing (runtime-pin.mjs): the npm scripts pass them, `npx kafkaiq`
// cannot.
// Plain JavaScript on purpose: it must run on whatever Node the user has, before tsx loads.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { PINNED_NODE_BINARY, PINNED_NODE_VERSION, ROOT, SERVER_V8_FLAGS } from './runtime-pin.mjs';

const missingFlags = SERVER_V8_FLAGS.filter((flag) => !process.execArgv.includes(flag));
if ((`v${PINNED_NODE_VERSION}` !== process.version || missingFlags.length) && !process.env.KAFKAIQ_ANY_NODE) {
  if (!fs.existsSync(PINNED_NODE_BINARY)) {
    console.error(
      `kafkaiq: KafkaIQ runs on Node ${PINNED_NODE_VERSION}, which is not installed (this is Node ${process.version.slice(1)}): run 'npm install' in ${ROOT}.`,
    );
    process.exit(2);
  }
  // KAFKAIQ_ANY_NODE stops a loop if the binary there is not the pinned version after all.
  const result = spawnSync(PINNED_NODE_BINARY, [...missingFlags, ...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: { ...process.env, KAFKAIQ_ANY_NODE: '1' },
  });
  process.exit(result.status ?? 1);
}
