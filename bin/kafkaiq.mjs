#!/usr/bin/env node
// Entry point of `npx kafkaiq`: the CLI is TypeScript, run through tsx's loader.
import { register } from 'tsx/esm/api';

register();
await import('../lab-server/cli/kafkaiq.ts');
