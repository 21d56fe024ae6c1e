import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { labDefinitionSchema, labIdSchema, type LabDefinition } from '../../src/shared/lab.ts';
import { parseWithFriendlyErrors } from '../../src/shared/validate.ts';
import { KafkaIqError } from '../../src/shared/errors.ts';
import { LABS_DIR } from '../core/paths.ts';
import { CHECK_NAMES, type CheckName } from '../../src/shared/report.ts';
import { parseExpectFail } from '../../src/shared/lab-coverage.ts';
import { applyMistake, describeVariant, parseMistake } from '../../src/shared/mistake.ts';
import { clientFile, KAFKA_CLIENTS, type KafkaClient } from '../../src/shared/clients.ts';
import { apiLabProblems } from './api-rules.ts';
import { learnerNames } from '../kafka/attempt-names.ts';

export interface BrokenVariant {
  name: string;
  /** Where it is declared: broken/<name>.diff (a mistake made to a solution) or broken/<name>.ts (a whole program). */
  file: string;
  /** The program as graded: a whole-file variant's text, or the solution with the mistake applied (src/shared/mistake.ts). */
  source: string;
  /** For a mistake: the solution file it changes (solution.ts or solution.<client>.ts). */
  base: string | null;
  /** The check this variant must fail, from its first line `// expect-fail: <check>`. */
  expectFail: CheckName;
  /** What its comment lines say the mistake is, as prose. */
  about: string;
  /** A mistake's hunks as its .diff declares them, or null for a whole program. */
  edits: string | null;
  /** Why only the full plan catches it (its `// full-plan: <why>` line), or null: the quick plan does. */
  fullPlan: string | null;
}

export interface LoadedLab {
  id: string;
  dir: string;
  definition: LabDefinition;
  starterFile: string;
  solutionFile: string;
  broken: BrokenVariant[];
  hints: string;
  /**
   * The lab's files for Kafka clients other than kafkajs (src/shared/clients.ts): a reference
   * solution (`solution.<client>.ts`), and a starter and hints where the lab has them.
   */
  clients: Partial<Record<Exclude<KafkaClient, 'kafkajs'>, { solutionFile: string; starterFile: string | null; hints: string | null }>>;
}

export function listLabIds(): string[] {
  if (!fs.existsSync(LABS_DIR)) return [];
  return fs
    .readdirSync(LABS_DIR, { withFileTypes: true })
    .filter((e) => e.isDirectory() && fs.existsSync(path.join(LABS_DIR, e.name, 'lab.ts')))
    .map((e) => e.name)
    .sort();
}

const cache = new Map<string, Promise<LoadedLab>>();
/** Bumped by forgetLab: a new import URL, since Node's module cache cannot forget a module. */
const generations = new Map<string, number>();

/** The next loadLab(id) reads labs/<id>/ again (`npm run dev` calls it when the folder changes). */
export function forgetLab(id: string): void {
  cache.delete(id);
  generations.set(id, (generations.get(id) ?? 0) + 1);
}

/** Loads and validates labs/<id>; every problem is one line naming the file and field. */
export function loadLab(id: string): Promise<LoadedLab> {
  let loaded = cache.get(id);
  if (!loaded) {
    loaded = readLab(id);
    cache.set(id, loaded);
    loaded.catch(() => cache.delete(id));
  }
  return loaded;
}

/**
 * Loads labs/<id> afresh after an edit (`kafkaiq check --watch`): lab.ts is imported again and the
 * folder read again. Modules that lab.ts imports stay as first loaded.
 */
export function reloadLab(id: string): Promise<LoadedLab> {
  forgetLab(id);
  return loadLab(id);
}

async function readLab(id: string): Promise<LoadedLab> {
  if (!labIdSchema.safeParse(id).success || !fs.existsSync(path.join(LABS_DIR, id, 'lab.ts'))) {
    const known = listLabIds();
    throw new KafkaIqError('LAB_NOT_FOUND', `No lab "${id}"${known.length ? `: known labs are ${known.join(', ')}` : ''}.`);
  }
  const dir = path.join(LABS_DIR, id);
  const generation = generations.get(id);
  const url = pathToFileURL(path.join(dir, 'lab.ts')).href + (generation ? `?generation=${generation}` : '');
  const module = await import(url);
  const definition = parseWithFriendlyErrors(labDefinitionSchema, module.default, `Invalid lab "${id}" (labs/${id}/lab.ts)`, 'LAB_INVALID');
  assertConsistent(id, definition);
  const required = (name: string) => {
    const file = path.join(dir, name);
    if (!fs.existsSync(file)) throw new KafkaIqError('LAB_INVALID', `Lab "${id}" has no ${name}: add labs/${id}/${name}.`);
    return file;
  };
  const broken = loadBrokenVariants(id, dir);
  return {
    id,
    dir,
    definition,
    starterFile: required('starter.ts'),
    solutionFile: required('solution.ts'),
    broken,
    hints: fs.readFileSync(required('hints.md'), 'utf8'),
    clients: otherClients(id, dir),
  };
}

/**
 * The lab's broken variants, each as graded: `broken/<name>.diff` is its solution plus one named
 * mistake, materialised here (an anchor that no longer matches is a load error naming it);
 * `broken/<name>.ts` is a whole program, for a mistake that is really a rewrite.
 */
export function loadBrokenVariants(id: string, dir: string): BrokenVariant[] {
  const brokenDir = path.join(dir, 'broken');
  if (!fs.existsSync(brokenDir)) return [];
  const files = fs.readdirSync(brokenDir).filter((f) => f.endsWith('.ts') || f.endsWith('.diff'));
  const names = files.map((f) => f.replace(/\.(ts|diff)$/, ''));
  const twice = names.find((n, k) => names.indexOf(n) !== k);
  if (twice) throw new KafkaIqError('LAB_INVALID', `labs/${id}/broken/ has both ${twice}.ts and ${twice}.diff: keep one.`);
  return files.sort().map((f) => {
    const file = path.join(brokenDir, f);
    const where = `labs/${id}/broken/${f}`;
    const text = fs.readFileSync(file, 'utf8');
    const expectFail = parseExpectFail(text);
    if (!expectFail) {
      throw new KafkaIqError('LAB_INVALID', `${where} must start with '// expect-fail: <check>' naming one of: ${CHECK_NAMES.join(', ')}.`);
    }
    const name = f.replace(/\.(ts|diff)$/, '');
    const { comments, about, edits, fullPlan } = describeVariant(text);
    if (f.endsWith('.ts')) {
      // A whole program drifts from the solution it should differ from by one mistake: it must say why it is one.
      if (!comments.some((l) => /^\/\/ Whole program: \S/.test(l))) {
        throw new KafkaIqError('LAB_INVALID', `${where} is a whole program: make it broken/${name}.diff, the solution plus its mistake (AUTHORING.md), or say why it cannot be one in a '// Whole program: <why>' line of its first comment.`);
      }
      return { name, file, source: text, base: null, expectFail, about, edits: null, fullPlan };
    }
    const mistake = parseMistake(text, where);
    const solution = path.join(dir, mistake.base);
    if (!fs.existsSync(solution)) throw new KafkaIqError('LAB_INVALID', `${where}: '--- ${mistake.base}': labs/${id} has no ${mistake.base}.`);
    return { name, file, source: applyMistake(mistake, fs.readFileSync(solution, 'utf8'), where), base: mistake.base, expectFail, about, edits, fullPlan };
  });
}

function otherClients(id: string, dir: string): LoadedLab['clients'] {
  const clients: LoadedLab['clients'] = {};
  for (const client of KAFKA_CLIENTS) {
    if (client === 'kafkajs') continue;
    const at = (base: 'solution.ts' | 'starter.ts' | 'hints.md') => path.join(dir, clientFile(base, client));
    const solutionFile = at('solution.ts');
    const starterFile = fs.existsSync(at('starter.ts')) ? at('starter.ts') : null;
    const hintsFile = fs.existsSync(at('hints.md')) ? at('hints.md') : null;
    if (!fs.existsSync(solutionFile)) {
      if (starterFile || hintsFile) throw new KafkaIqError('LAB_INVALID', `Lab "${id}" has a ${client} starter or hints but no ${clientFile('solution.ts', client)}: add it.`);
      continue;
    }
    clients[client] = { solutionFile, starterFile, hints: hintsFile ? fs.readFileSync(hintsFile, 'utf8') : null };
  }
  return clients;
}

function assertConsistent(id: string, lab: LabDefinition): void {
  const names = new Set(lab.topics.map((t) => t.name));
  const envNames = new Set(lab.env.map((e) => e.name));
  const fail = (msg: string): never => {
    throw new KafkaIqError('LAB_INVALID', `Invalid lab "${id}" (labs/${id}/lab.ts): ${msg}`);
  };
  for (const seed of lab.kind === 'pipeline' ? lab.seeds : []) {
    const topic = lab.topics.find((t) => t.name === seed.topic);
    if (!topic) fail(`seeds: topic "${seed.topic}" is not declared in topics`);
    else if (topic.role !== 'input') fail(`seeds: topic "${seed.topic}" must have role "input"`);
  }
  for (const topic of lab.topics) if (!envNames.has(topic.env)) fail(`env: topic "${topic.name}" uses ${topic.env}, which env does not describe`);
  if (!envNames.has('KAFKA_BROKERS')) fail('env: KAFKA_BROKERS must be described');
  // Only pipeline labs take a database, a throughput block or an API (the schema of each kind says so).
  const { database, throughput } = lab.kind === 'pipeline' ? lab : { database: undefined, throughput: undefined };
  // A lab whose output is rows in a database (a `database` block) may have no output topic.
  if (!lab.topics.some((t) => t.role === 'output') && !database) fail('topics: at least one topic needs role "output"');
  if (database && !envNames.has('DATABASE_URL')) fail('env: a lab with a database passes DATABASE_URL; describe it (and the tables the program writes to)');
  if (names.size !== lab.topics.length) fail('topics: names must be unique');
  for (const fault of [...lab.faults.full, ...lab.faults.quick]) {
    if (fault.topic && !names.has(fault.topic)) fail(`faults: topic "${fault.topic}" is not declared in topics`);
    if (fault.path && !(lab.kind === 'pipeline' && lab.api)) fail(`faults: path "${fault.path}" aims at the lab API, but the lab has no api block`);
  }
  // A throughput requirement and its check come together: one without the other is a silent no-op.
  const speedCheck = lab.checks.includes('throughput-speedup');
  if (throughput && !speedCheck) fail('checks: a lab with a throughput block must list "throughput-speedup"');
  if (!throughput && speedCheck) fail('checks: "throughput-speedup" needs a throughput block (baseline, records, minSpeedup)');
  if (throughput && !fs.existsSync(path.join(LABS_DIR, id, throughput.baseline))) {
    fail(`throughput.baseline: there is no labs/${id}/${throughput.baseline}`);
  }
  // The groups and transactional ids it declares expand to names (kafka/attempt-names.ts).
  try {
    learnerNames(lab, ['kiq-check'], lab.instances);
  } catch (err) {
    fail(err instanceof Error ? err.message : String(err));
  }
  // Labs that call the lab HTTP API (labs/api-rules.ts).
  for (const problem of apiLabProblems(lab)) fail(problem);
  // Each kind has its own grader (runner/attempt.ts): only the checks and faults it implements.
  const MONITOR_CHECKS = ['hanging-transaction-reported', 'no-false-alarms'];
  const monitorFaults = lab.faults.full.concat(lab.faults.quick).filter((f) => f.kind === 'hanging-transaction').length;
  if (lab.kind === 'pipeline') {
    if (!lab.seeds.length) fail('seeds: a pipeline lab needs at least one seed');
    if (monitorFaults) fail('faults: "hanging-transaction" is a fault of monitor labs (kind: "monitor")');
    const wrong = lab.checks.filter((c) => MONITOR_CHECKS.includes(c));
    if (wrong.length) fail(`checks: ${wrong.join(', ')} belong to monitor labs (kind: "monitor")`);
    return;
  }
  const monitor = lab.monitor;
  const watch = lab.topics.find((t) => t.name === monitor.watch);
  const alerts = lab.topics.find((t) => t.name === monitor.alerts);
  if (watch?.role !== 'input') fail(`monitor.watch: "${monitor.watch}" must be a topic with role "input"`);
  if (alerts?.role !== 'output') fail(`monitor.alerts: "${monitor.alerts}" must be a topic with role "output"`);
  const busy = new Set(monitor.workload.partitions);
  if ([...busy].some((p) => p >= (watch?.partitions ?? 0))) fail('monitor.workload.partitions: every partition must exist in the watched topic');
  if (busy.size >= (watch?.partitions ?? 0)) fail('monitor.workload.partitions: leave at least one partition quiet (for the long transaction that blocks nobody)');
  for (const env of ['BLOCKED_LAG_THRESHOLD', 'HANG_SECONDS', 'GROUP_ID']) if (!envNames.has(env)) fail(`env: a monitor lab passes ${env}; describe it`);
  if (lab.faults.full.concat(lab.faults.quick).some((f) => f.kind !== 'hanging-transaction')) fail('faults: a monitor lab takes only "hanging-transaction" faults');
  const wrong = lab.checks.filter((c) => !MONITOR_CHECKS.includes(c));
  if (wrong.length) fail(`checks: a monitor lab verifies only ${MONITOR_CHECKS.join(' and ')}, not ${wrong.join(', ')}`);
  if (lab.instances !== 1) fail('instances: a monitor runs as one instance');
}
