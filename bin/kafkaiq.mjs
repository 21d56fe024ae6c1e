#!/usr/bin/env node
// Entry point of `npx kafkaiq`: the CLI is TypeScript, run through tsx's loader, on the pinned
// Node (pinned-node.mjs starts it again there when another Node runs this file).
import './pinned-node.mjs';
import { register } from 'tsx/esm/api';

register();
await import('../lab-server/cli/kafkaiq.ts');
