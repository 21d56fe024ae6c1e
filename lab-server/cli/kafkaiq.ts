/**
 * `npx kafkaiq`: grade a program against a lab, check every lab's fixtures, scaffold a lab.
 * Exit codes: 0 pass, 1 fail or inconclusive, 2 infrastructure error (never the learner's fault).
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ClusterPool } from '../broker/cluster-pool.ts';
import { describeError, KafkaIqError } from '../../src/shared/errors.ts';
import { listLabIds, loadLab } from '../labs/load-lab.ts';
import { scaffoldLab } from '../labs/scaffold.ts';
import { formatKnownMistakes, showFixture } from '../labs/show-fixture.ts';
import type { ProgramInput } from '../runner/types.ts';
import { formatReport } from '../../src/shared/format-report.ts';
import type { SessionListener } from '../runner/contract.ts';
import { checkLabs, gradeProgram } from '../runner/check-labs.ts';
import { labCoverageProblems, loadLabFacts } from '../labs/coverage.ts';
import { watchLab } from '../labs/watch-lab.ts';
import { formatLabFacts } from '../../src/shared/lab-facts.ts';
import { databasePool } from '../db/pool.ts';
import { jsonForTerminal, keepOnlyColours, showControlCharacters } from '../../src/shared/sanitise.ts';

/**
 * What this CLI writes to the terminal: lines and blocks whose text may quote a program (reports,
 * grader logs, errors). Only our own colours pass (src/shared/sanitise.ts); every other control
 * character is shown escaped, newlines of a block aside.
 */
const say = (text: string) => console.log(keepOnlyColours(text, { keepNewlines: true }));

const USAGE = `Usage:
  kafkaiq grade <lab> <file.ts | broken/<name>.diff | --cmd "command"> [--seed N] [--quick] [--json] [--verbose]
  kafkaiq check [<lab>...] [--quick] [--parallel N]
                                          grade every lab's solution, starter, broken variants and command fixtures,
                                          after checking that a fixture fails each of a lab's checks (coverage);
                                          --parallel: grades at once (default 3)
  kafkaiq check --watch <lab> [--quick]   grade again, on every save, the fixtures of labs/<lab>/ that changed
  kafkaiq new <id>                        scaffold labs/<id>
  kafkaiq show <lab> <fixture>            a fixture's program as graded (solution, starter, broken/<name>), and a
                                          broken variant's difference from its solution
  kafkaiq labs [<lab>...]                 each lab's faults, checks (and which fixture fails each), limits, clients,
                                          and its known mistakes (a named lab: with their edits to the solution)`;

function consoleListener(verbose: boolean, json: boolean): SessionListener {
  const out = json ? process.stderr : process.stdout;
  return {
    output: (instance, stream, line) => {
      // Program output: shown escaped whole (the sink did so already; this holds for any listener's caller).
      if (verbose || stream === 'system') out.write(`${showControlCharacters(instance).padEnd(6)} ${showControlCharacters(line)}\n`);
    },
    diagnostics: () => {},
    progress: () => {},
    state: () => {},
    fault: () => {},
  };
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      cmd: { type: 'string' },
      seed: { type: 'string' },
      quick: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      verbose: { type: 'boolean', short: 'v', default: false },
      help: { type: 'boolean', short: 'h', default: false },
      parallel: { type: 'string' },
      watch: { type: 'boolean', default: false },
    },
  });
  const [command, ...rest] = positionals;
  if (values.help || !command) {
    console.log(USAGE);
    return command || values.help ? 0 : 2;
  }
  if (command === 'labs') {
    const ids = rest.length ? rest : listLabIds();
    for (const id of ids) {
      console.log(formatLabFacts(await loadLabFacts(id)));
      // Named labs get each mistake's edits; the whole list, one line per mistake.
      say(formatKnownMistakes((await loadLab(id)).broken, { edits: rest.length > 0 }));
    }
    return 0;
  }
  if (command === 'show') {
    if (rest.length !== 2) throw new KafkaIqError('INVALID_INPUT', `show needs a lab and a fixture: kafkaiq show <lab> broken/<name>\n${USAGE}`);
    const shown = await showFixture(rest[0]!, rest[1]!);
    say(`// ${shown.about}\n${shown.program}`);
    if (shown.diff) say(`\n${shown.diff}`);
    return 0;
  }
  if (command === 'new') {
    if (!rest[0]) throw new KafkaIqError('INVALID_INPUT', 'Name the lab: kafkaiq new <id>');
    const dir = scaffoldLab(rest[0]);
    console.log(`Created ${path.relative(process.cwd(), dir)}/: edit lab.ts, then run 'npx kafkaiq check ${rest[0]}'.`);
    return 0;
  }
  if (command !== 'grade' && command !== 'check') throw new KafkaIqError('INVALID_INPUT', `Unknown command "${command}".\n${USAGE}`);

  // Each lab gets the cluster it declares; a 3-node cluster starts only if a lab needs one.
  const clusters = new ClusterPool({ log: (l) => console.error(l) });
  try {
    if (command === 'check' && values.watch) {
      if (rest.length !== 1) throw new KafkaIqError('INVALID_INPUT', `--watch follows one lab: kafkaiq check --watch <lab>\n${USAGE}`);
      // One clear error for an unknown lab or a broker that cannot start, before any watching.
      await clusters.get((await loadLab(rest[0]!)).definition.cluster);
      // Ctrl-C ends the watch after the grade under way (its programs get the SIGINT too).
      const stop = new AbortController();
      process.once('SIGINT', () => {
        console.log('\nStopping the watch.');
        stop.abort();
      });
      await watchLab(rest[0]!, clusters, stop.signal, { quick: values.quick, log: say });
      return 0;
    }
    if (command === 'check') {
      const labIds = rest.length ? rest : listLabIds();
      // The coverage rule first: it needs no broker and names the file to fix.
      const coverage = await labCoverageProblems(labIds);
      for (const problem of coverage) console.log(`✗ coverage: ${problem}`);
      // Connect (or start) every cluster the labs need before grading, so a broker that cannot
      // start is one clear error (exit 2), not a column of failed fixtures.
      const loaded = await Promise.all(labIds.map((id) => loadLab(id)));
      const kinds = new Set(loaded.map((l) => l.definition.cluster));
      for (const kind of kinds) await clusters.get(kind);
      // Likewise the database of the database labs (DATABASE_URL, when given, must answer).
      if (loaded.some((l) => l.definition.kind === 'pipeline' && l.definition.database)) await databasePool().verify();
      const results = await checkLabs(labIds, clusters, {
        quick: values.quick,
        parallel: values.parallel ? Number(values.parallel) : undefined,
        log: say,
      });
      if (coverage.length) console.log(`\n${coverage.length} coverage problem${coverage.length === 1 ? '' : 's'}: see the "coverage" lines above (and AUTHORING.md, "Coverage").`);
      return results.every((r) => r.ok) && !coverage.length ? 0 : 1;
    }
    const [labId, file] = rest;
    if (!labId || (!file && !values.cmd)) throw new KafkaIqError('INVALID_INPUT', `grade needs a lab and a program.\n${USAGE}`);
    const lab = await loadLab(labId);
    let program: ProgramInput;
    if (values.cmd) program = { kind: 'command', command: values.cmd };
    else {
      if (!fs.existsSync(file!)) throw new KafkaIqError('INVALID_INPUT', `No such file: ${file}`);
      // A broken variant declared as a mistake (broken/<name>.diff) is graded as its solution with the mistake applied.
      const mistake = file!.endsWith('.diff') ? lab.broken.find((b) => path.resolve(b.file) === path.resolve(file!)) : undefined;
      if (file!.endsWith('.diff') && !mistake) throw new KafkaIqError('INVALID_INPUT', `${file} is not a broken variant of ${labId}: grade a program, or a labs/${labId}/broken/<name>.diff`);
      program = { kind: 'code', code: mistake ? mistake.source : fs.readFileSync(file!, 'utf8') };
    }
    const seed = values.seed === undefined ? undefined : Number(values.seed);
    if (seed !== undefined && !Number.isInteger(seed)) throw new KafkaIqError('INVALID_INPUT', `--seed must be an integer, got "${values.seed}"`);
    if (lab.definition.cluster === 'three-nodes' && !clusters.isReady('three-nodes')) console.error(`${labId} runs on a 3-broker cluster: connecting to it (or starting it, about 20 s)...`);
    const report = await gradeProgram(clusters, labId, program, { quick: values.quick, seed, listener: consoleListener(values.verbose, values.json)});
    // Colours and wrapping only on a terminal (NO_COLOR turns colours off): piped text stays plain.
    const tty = process.stdout.isTTY;
    say(values.json ? jsonForTerminal(report) : formatReport(report, { color: tty && !process.env.NO_COLOR, width: tty ? process.stdout.columns : undefined }));
    return report.verdict === 'pass' ? 0 : report.verdict === 'error' ? 2 : 1;
  } finally {
    await clusters.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(keepOnlyColours(`kafkaiq: ${describeError(err)}`, { keepNewlines: true }));
    process.exit(err instanceof KafkaIqError && !err.isInfrastructure ? 1 : 2);
  },
);
