/** What the module-gate tests assert of load-refused-builtins.ts's output. */
import fs from 'node:fs';
import { expect } from 'vitest';
import type { AttackResult } from './tenancy-support.ts';

/** Every way the attack tried, each refused by the gate (ERR_KAFKAIQ_MODULE_REFUSED), nothing loaded, nothing written. */
export function expectEveryWayRefused(attack: AttackResult & { output: string[] }): void {
  const report = attack.output.filter((l) => / stdout (LOADED|REFUSED) /.test(l));
  expect(attack.allowed, report.join('\n')).toBe(false);
  expect(report.filter((l) => / LOADED /.test(l)), report.join('\n')).toEqual([]);
  const ways = ['computed import()', 'process.getBuiltinModule', 'getBuiltinModule without prefix', 'getBuiltinModule of v8', 'createRequire require', 'Module._load', 'a data: module', 'registerHooks in front', 'computed import() of vm'];
  for (const way of ways) {
    const line = report.find((l) => l.includes(` REFUSED ${way} `));
    expect(line, `${way}:\n${report.join('\n')}`).toMatch(/ERR_KAFKAIQ_MODULE_REFUSED/);
  }
  expect(fs.existsSync('/tmp/kafkaiq-gate-escape.sqlite')).toBe(false);
}
