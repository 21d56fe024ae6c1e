/**
 * Helpers of the tenancy tests: an innocent learner's grade, and attack programs run the way the
 * workbench runs any learner program (compiled, sandboxed, with exactly an attempt's env).
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { GradeReport } from '../../src/shared/report.ts';
import { LABS_DIR, ROOT_DIR } from '../../lab-server/core/paths.ts';
import { loadLab } from '../../lab-server/labs/load-lab.ts';
import { createAttempt } from '../../lab-server/runner/attempt.ts';
import type { SessionListener } from '../../lab-server/runner/contract.ts';
import type { AttemptLifecycle } from '../../lab-server/runner/lifecycle.ts';

export function namespace(tag: string): string {
  return `kiq-${tag}-${randomBytes(3).toString('hex')}`;
}

function listener(lines: string[] = [], onPhase: (phase: string) => void = () => {}): SessionListener {
  return {
    output: (instance, stream, line) => void lines.push(`${instance} ${stream} ${line}`),
    diagnostics: () => {},
    progress: (p) => onPhase(p.phase),
    state: () => {},
    fault: () => {},
  };
}

/**
 * A quick grade of the single-stage solution in its own namespace: what every attack must leave
 * alone. graderId: the prefix of the grader's own groups and transactional ids in that grade.
 */
export async function innocentGrade(brokers: string[], ns = namespace('innocent')): Promise<{ namespace: string; graderId: string; report: Promise<GradeReport> }> {
  const lab = await loadLab('single-stage');
  const code = fs.readFileSync(path.join(LABS_DIR, 'single-stage', 'solution.ts'), 'utf8');
  let running: () => void = () => {};
  const started = new Promise<void>((resolve) => (running = resolve));
  const onPhase = (phase: string) => phase === 'running' && running();
  const attempt = createAttempt({ lab, program: { kind: 'code', code }, brokers, control: null, namespace: ns, mode: 'quick', listener: listener([], onPhase) });
  const report = attempt.grade();
  // The attack starts once the victim's topics, group and transactions exist.
  await Promise.race([started, report]);
  return { namespace: ns, graderId: (attempt as AttemptLifecycle).graderId, report };
}

export interface AttackResult {
  allowed: boolean;
  refusal?: string;
}

/**
 * Runs an attack program (tests/security/attacks/NAME.ts, victim names filled in) as a Run of the
 * single-stage lab and returns the RESULT line it prints.
 */
export async function runAttack(
  brokers: string[],
  name: string,
  victimNamespace: string,
  fill: Record<string, string> = {},
  timeoutMs = 40_000,
  /** Told the attacker's own namespace before it starts. */
  onNamespace: (namespace: string) => void = () => {},
): Promise<AttackResult & { output: string[] }> {
  const lab = await loadLab('single-stage');
  let code = fs.readFileSync(path.join(ROOT_DIR, 'tests/security/attacks', `${name}.ts`), 'utf8').replaceAll('__VICTIM_NS__', victimNamespace);
  for (const [placeholder, value] of Object.entries(fill)) code = code.replaceAll(placeholder, value);
  const lines: string[] = [];
  const own = namespace('attacker');
  onNamespace(own);
  const attempt = createAttempt({ lab, program: { kind: 'code', code }, brokers, control: null, namespace: own, mode: 'run', listener: listener(lines) });
  const done = attempt.run();
  const deadline = Date.now() + timeoutMs;
  let result: AttackResult | null = null;
  while (!result && Date.now() < deadline) {
    const line = lines.find((l) => / stdout RESULT /.test(l));
    if (line) result = JSON.parse(line.slice(line.indexOf('RESULT ') + 7));
    else await new Promise((r) => setTimeout(r, 100));
  }
  attempt.requestStop();
  await done;
  await attempt.deleteTopics();
  if (!result) throw new Error(`attack ${name} printed no RESULT within ${timeoutMs} ms:\n${lines.slice(-30).join('\n')}`);
  return { ...result, output: lines };
}
