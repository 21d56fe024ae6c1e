/**
 * The terminal's command language: parsing only, no side effects, so it can be tested without a
 * browser. The workbench turns each Command into a protocol message.
 */
import type { z } from 'zod';
import type { inspectMessageSchema } from '../../../shared/messages.ts';

/** What the browser sends: the input shape, so fields with a server-side default may be left out. */
export type InspectRequest = z.input<typeof inspectMessageSchema>['command'];

export type Command =
  | { kind: 'help' }
  | { kind: 'clear' }
  | { kind: 'run' }
  | { kind: 'grade'; quick: boolean; seed?: number }
  | { kind: 'stop' }
  | { kind: 'inspect'; command: InspectRequest; topicArg?: string }
  | { kind: 'empty' }
  | { kind: 'invalid'; message: string };

export const HELP_LINES: readonly string[] = [
  'help                         this list',
  'run                          run your program (no faults) until you stop it',
  'grade [--quick] [--seed N]   grade it under injected faults (--seed replays a fault plan)',
  'stop                         stop the run or the grade',
  'topics                       the lab topics and their real names',
  'consume <topic> [--from-beginning] [--isolation read_committed|read_uncommitted]',
  '                             read a topic; aborted records and transaction markers are marked',
  'offsets <topic>              log start, LSO, HWM, committed offset and blocked lag per partition',
  'txns                         open and recent transactions',
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

function parseConsume(args: string[]): Command {
  const usage = 'usage: consume <topic> [--from-beginning] [--isolation read_committed|read_uncommitted]';
  let topic: string | undefined;
  let fromBeginning = false;
  let isolation: (typeof ISOLATIONS)[number] | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--from-beginning') fromBeginning = true;
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
