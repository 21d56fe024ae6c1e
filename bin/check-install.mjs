// npm's postinstall step: one clear line when the install cannot give KafkaIQ what it runs on.
// The pinned runtime is an optional dependency only so that a failed download (registry
// unreachable) ends here, with the fix, instead of in npm's rollback of the whole install.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { PINNED_NODE_BINARY as binary, PINNED_NODE_VERSION as pinned } from './runtime-pin.mjs';

function fail(line) {
  console.error(`kafkaiq: ${line}`);
  process.exit(1);
}

// npm_config_user_agent looks like "npm/11.19.1 node/v20.20.2 linux x64 workspaces/false".
const npmMajor = Number(/^npm\/(\d+)/.exec(process.env.npm_config_user_agent ?? '')?.[1] ?? 0);
if (npmMajor && npmMajor < 9) {
  fail(`installing KafkaIQ needs npm 9 or newer (this is ${process.env.npm_config_user_agent.split(' ')[0]}): run 'npm install -g npm@11', then 'npm install' again.`);
}
if (!fs.existsSync(binary)) {
  fail(`the pinned Node ${pinned} did not install (npm could not download the node package; see its warnings above): check that the npm registry is reachable ('npm ping'), then run 'npm install' again.`);
}
const version = spawnSync(binary, ['--version'], { encoding: 'utf8' }).stdout?.trim();
if (version !== `v${pinned}`) {
  fail(`node_modules/.bin/node is ${version || 'not runnable'}, not the pinned v${pinned}: delete node_modules and run 'npm install' again.`);
}
