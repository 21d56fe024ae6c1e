// Entry point of an embedded database child process: the code is TypeScript, run through tsx's
// loader (as bin/kafkaiq.mjs does). See embedded.ts for who starts it and why.
import { register } from 'tsx/esm/api';

register();
await import('./embedded-child.ts');
