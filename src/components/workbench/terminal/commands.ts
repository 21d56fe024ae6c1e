/**
 * The terminal's command language: parsing only, no side effects, so it can be tested without a
 * browser. The workbench turns each Command into a protocol message.
 */
import type { z } from 'zod';
import { DEFAULT_CONSUME_LIMIT, MAX_CONSUME_LIMIT, MAX_SQL_CHARS, type inspectMessageSchema } from '../../../shared/messages.ts';

/** What the browser sends: the input shape, so fields with a server-side default may be left out. */
export type InspectRequest = z.input<typeof inspectMessageSchema>['command'];

export type Command =
  | { kind: 'help' }
  | { kind: 'clear' }
  | { kind: 'run' }
  | { kind: 'grade'; quick: boolean; seed?: number }
  | { kind: 'stop' }
  | { kind: 'inspect'; command: InspectRequest; topicArg?: string }
  /** The lab's graded attempts: list them, or show / load / diff attempt #n (its number in the list). */
  | { kind: 'history'; action: 'list' | 'show' | 'load' | 'diff'; n?: number }
  | { kind: 'empty' }
  | { kind: 'invalid'; message: string };

export const HELP_LINES: readonly string[] = [
  'help                         this list',
  'run                          run your program (no faults) until you stop it',
  'grade [--quick] [--seed N]   grade it under injected faults (--seed replays a fault plan)',
  'stop                         stop the run or the grade',
  'topics                       the lab topics and their real names',
  `consume <topic> [--from OFFSET] [--limit N] [--partition P] [--isolation read_committed|read_uncommitted]`,
  `                             the last ${DEFAULT_CONSUME_LIMIT} entries of each partition (or N from OFFSET);`,
  '                             aborted records and transaction markers are marked',
  'offsets <topic>              log start, LSO, HWM, committed offset and blocked lag per partition',
  'txns                         open and recent transactions',
  "sql <SELECT ...>             query the lab's database while your program runs (read-only, 50 rows)",
  'history                      your graded attempts of this lab, newest first',
  'history show|load|diff N     reopen attempt #N: its report, its program in the editor, or a diff with your code',
  'clear                        clear the terminal',
  'A <topic> may be its env name (OUTPUT_TOPIC), its lab name (output) or its real name.',
];

const ISOLATIONS = ['read_committed', 'read_uncommitted'] as const;

export function parseCommand(line: string): Command {
  const words = line.trim().split(/\s+/).filter(Boolean);
  const [name, ...args] = words;
  if (!name) return { kind: 'empty' };
  switch (name.toLowerCase()) {
    case 'help':
    case '?':
      return { kind: 'help' };
    case 'clear':
    case 'cls':
      return { kind: 'clear' };
    case 'run':
      return noArguments('run', args) ?? { kind: 'run' };
    case 'stop':
      return noArguments('stop', args) ?? { kind: 'stop' };
    case 'grade':
      return parseGrade(args);
    case 'topics':
      return noArguments('topics', args) ?? { kind: 'inspect', command: { what: 'topics' } };
    case 'txns':
      return noArguments('txns', args) ?? { kind: 'inspect', command: { what: 'txns' } };
    case 'offsets':
      if (args.length !== 1) return invalid('usage: offsets <topic>');
      return { kind: 'inspect', command: { what: 'offsets', topic: args[0]! }, topicArg: args[0] };
    case 'consume':
      return parseConsume(args);
    case 'sql': {
      // The query is the rest of the line as typed (spaces and quotes kept).
      const query = line.trim().slice(name.length).trim();
      if (!query) return invalid('usage: sql <SELECT ...>, e.g. sql SELECT * FROM effects LIMIT 5');
      if (query.length > MAX_SQL_CHARS) return invalid(`sql: a query has at most ${MAX_SQL_CHARS} characters`);
      return { kind: 'inspect', command: { what: 'sql', query } };
    }
    case 'history':
      return parseHistory(args);
    default:
      return invalid(`unknown command "${name}": type help for the list`);
  }
}

function parseGrade(args: string[]): Command {
  let quick = false;
  let seed: number | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--quick' || arg === '-q') quick = true;
    else if (arg === '--seed' || arg.startsWith('--seed=')) {
      const text = arg.includes('=') ? arg.slice('--seed='.length) : args[++i];
      if (!text || !/^\d{1,10}$/.test(text) || Number(text) > 2 ** 31 - 1) return invalid('usage: grade [--quick] [--seed N], N a whole number up to 2147483647');
      seed = Number(text);
    } else return invalid(`grade: unknown option "${arg}" (usage: grade [--quick] [--seed N])`);
  }
  return seed === undefined ? { kind: 'grade', quick } : { kind: 'grade', quick, seed };
}

function parseHistory(args: string[]): Command {
  const usage = 'usage: history, or history show|load|diff N (N: the attempt number the list shows)';
  if (args.length === 0) return { kind: 'history', action: 'list' };
  const [action, number, ...rest] = args;
  if (!['show', 'load', 'diff'].includes(action!) || !number || rest.length || !/^#?\d{1,6}$/.test(number)) return invalid(usage);
  return { kind: 'history', action: action as 'show' | 'load' | 'diff', n: Number(number.replace('#', '')) };
}

function parseConsume(args: string[]): Command {
  const usage = `usage: consume <topic> [--from OFFSET] [--limit N (1-${MAX_CONSUME_LIMIT})] [--partition P] [--isolation read_committed|read_uncommitted]`;
  let topic: string | undefined;
  let fromBeginning = false;
  let isolation: (typeof ISOLATIONS)[number] | undefined;
  const numbers: { from?: number; limit?: number; partition?: number } = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const option = /^--(from|limit|partition)(?:=(.*))?$/.exec(arg);
    if (option) {
      const text = option[2] ?? args[++i];
      if (!text || !/^\d{1,12}$/.test(text)) return invalid(usage);
      const value = Number(text);
      if (option[1] === 'limit' && (value < 1 || value > MAX_CONSUME_LIMIT)) return invalid(usage);
      if (option[1] === 'partition' && value > 999) return invalid(usage);
      numbers[option[1] as 'from' | 'limit' | 'partition'] = value;
    } else if (arg === '--from-beginning') fromBeginning = true;
    else if (arg === '--isolation' || arg.startsWith('--isolation=')) {
      const value = arg.includes('=') ? arg.slice('--isolation='.length) : args[++i];
      if (!ISOLATIONS.includes(value as (typeof ISOLATIONS)[number])) return invalid(usage);
      isolation = value as (typeof ISOLATIONS)[number];
    } else if (arg.startsWith('-') || topic !== undefined) return invalid(usage);
    else topic = arg;
  }
  if (!topic) return invalid(usage);
  // Flags the learner left out are left out of the message too: the server's defaults apply.
  const command: InspectRequest = {
    what: 'consume',
    topic,
    ...(fromBeginning ? { fromBeginning: true } : {}),
    ...(isolation ? { isolation } : {}),
    // --from-beginning is --from 0.
    ...(fromBeginning && numbers.from === undefined ? { from: 0 } : {}),
    ...numbers,
  };
  return { kind: 'inspect', command, topicArg: topic };
}

function noArguments(name: string, args: string[]): Command | null {
  return args.length ? invalid(`${name} takes no arguments`) : null;
}

function invalid(message: string): Command {
  return { kind: 'invalid', message };
}

/**
 * The real topic name for what the learner typed: an env name (OUTPUT_TOPIC) or a lab name
 * (output) is looked up in the topics of the last run; anything else is taken as the real name.
 */
export function resolveTopic(typed: string, topics: Record<string, string>): { topic: string } | { error: string } {
  if (/^[A-Z][A-Z0-9_]*$/.test(typed)) {
    const real = topics[typed];
    return real ? { topic: real } : { error: `${typed} is not known yet: run your program first, or type the real topic name (see topics)` };
  }
  const reals = Object.values(topics);
  if (reals.includes(typed)) return { topic: typed };
  const byLabName = reals.filter((real) => real.endsWith(`-${typed}`) || real.endsWith(`.${typed}`));
  if (byLabName.length === 1) return { topic: byLabName[0]! };
  return { topic: typed };
}
