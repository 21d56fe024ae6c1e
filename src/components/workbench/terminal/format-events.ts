/** One-line terminal notes for grader events: phase changes, faults, compile diagnostics. */
import type { Diagnostic, ProgressMessage } from '../../../shared/messages.ts';
import type { FaultRecord } from '../../../shared/report.ts';
import { ansi, instanceTag } from './ansi.ts';
import { landingNote } from '../../../shared/fault-landing.ts';
import { showControlCharacters, showControlCharactersDeep } from '../../../shared/sanitise.ts';

// Fault notes quote what programs chose (keys, paths, transactional ids) and compiler messages
// quote the program's code: each is sanitised here, before it is coloured.

export function formatPhase(raw: ProgressMessage): string {
  const progress = showControlCharactersDeep(raw);
  const mode = progress.mode === 'quick' ? 'quick grade' : progress.mode;
  return `${instanceTag('grader')} ${ansi.dim(`${mode}: ${progress.phase}`)}`;
}

export function formatFault(raw: FaultRecord): string {
  const fault = showControlCharactersDeep(raw);
  const where = fault.crashPoint ? ` at ${fault.crashPoint}` : '';
  const txn = fault.inTransaction === null ? '' : fault.inTransaction ? ', transaction open' : ', no transaction open';
  const note = fault.note ? ` — ${fault.note}` : '';
  return `${instanceTag('grader')} ${ansi.yellow(`⚡ ${fault.kind} ${fault.instance}${where}`)}${ansi.dim(` (${(fault.atMs / 1000).toFixed(1)} s${txn})${landingNote(fault)}${note}`)}`;
}

export function formatDiagnostics(diagnostics: readonly Diagnostic[]): string[] {
  if (diagnostics.length === 0) return [];
  return [
    `${instanceTag('grader')} ${ansi.yellow(`${diagnostics.length} compile problem${diagnostics.length === 1 ? '' : 's'} (type errors do not stop the run):`)}`,
    ...diagnostics.map((d) => `  ${d.severity === 'error' ? ansi.red('error') : ansi.yellow('warning')} ${ansi.dim(`line ${d.line}:${d.column}`)} ${showControlCharacters(d.message)}`),
  ];
}
