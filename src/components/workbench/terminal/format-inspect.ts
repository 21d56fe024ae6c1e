/** Inspect results (topics, consume, offsets, txns, sql) as terminal lines. */
import type { ConsumedRecord, InspectResult } from '../../../shared/messages.ts';
import { ansi, table } from './ansi.ts';
import { showControlCharactersDeep } from '../../../shared/sanitise.ts';

/** The lines for one result. Every string in it (keys, values, ids a program chose) is sanitised before it is coloured. */
export function formatInspectResult(raw: InspectResult): string[] {
  const result = showControlCharactersDeep(raw);
  switch (result.what) {
    case 'topics':
      if (result.topics.length === 0) return [ansi.dim('No lab topics yet: run your program first.')];
      return table(result.topics, [
        { header: 'env', cell: (t) => t.env ?? ansi.dim('—') },
        { header: 'topic', cell: (t) => t.name },
        { header: 'partitions', cell: (t) => String(t.partitions), align: 'right' },
      ]);
    case 'consume':
      return formatConsume(result);
    case 'offsets':
      if (result.partitions.length === 0) return [ansi.dim(`${result.topic}: no partitions (does the topic exist?)`)];
      return [
        ansi.bold(result.topic),
        ...table(result.partitions, [
          { header: 'partition', cell: (p) => String(p.partition), align: 'right' },
          { header: 'log start', cell: (p) => String(p.logStart), align: 'right' },
          { header: 'LSO', cell: (p) => String(p.lso), align: 'right' },
          { header: 'HWM', cell: (p) => String(p.hwm), align: 'right' },
          { header: 'committed', cell: (p) => (p.committed === null ? ansi.dim('—') : String(p.committed)), align: 'right' },
          // Lag hidden behind an open transaction is what read_committed consumers wait on.
          { header: 'blocked lag', cell: (p) => (p.blockedLag > 0 ? ansi.yellow(String(p.blockedLag)) : '0'), align: 'right' },
        ]),
      ];
    case 'txns':
      if (result.transactions.length === 0) return [ansi.dim('No transactions.')];
      return table(result.transactions, [
        { header: 'transactional id', cell: (t) => t.transactionalId },
        { header: 'state', cell: (t) => colourTxnState(t.state) },
        { header: 'producer id', cell: (t) => String(t.producerId), align: 'right' },
        { header: 'open for', cell: (t) => (t.durationMs === null ? ansi.dim('—') : `${(t.durationMs / 1000).toFixed(1)} s`), align: 'right' },
        { header: 'partitions', cell: (t) => t.partitions.join(', ') || ansi.dim('—') },
      ]);
    case 'sql': {
      if (result.rows.length === 0) return [ansi.dim(`No rows (columns: ${result.columns.join(', ') || 'none'}).`)];
      const lines = table(
        result.rows,
        result.columns.map((header, i) => ({ header, cell: (row: (string | null)[]) => row[i] ?? ansi.dim('NULL') })),
      );
      lines.push(ansi.dim(result.truncated ? `First ${result.rows.length} rows shown; more matched (add a WHERE or a LIMIT).` : `${result.rows.length} row${result.rows.length === 1 ? '' : 's'}.`));
      return lines;
    }
  }
}

function formatConsume(result: Extract<InspectResult, { what: 'consume' }>): string[] {
  const lines = [ansi.bold(`${result.topic}`) + ansi.dim(` (${result.isolation}, ${result.records.length} records)`)];
  if (result.records.length === 0) lines.push(ansi.dim('No records.'));
  for (const record of result.records) lines.push(formatRecord(record));
  if (result.truncated) lines.push(ansi.dim('… more records not shown'));
  for (const o of result.omitted ?? []) {
    const parts = [o.before ? `${o.before} earlier` : '', o.after ? `${o.after} later` : ''].filter(Boolean).join(' and ');
    lines.push(ansi.dim(`partition ${o.partition}: ${parts} entries not shown (--from OFFSET, --limit N, --partition P)`));
  }
  if (result.records.length > 0) lines.push(consumeSummary(result.records, result.totals));
  return lines;
}

/**
 * A closing tally, so the story of a long listing (how much was aborted?) fits on one line: of
 * every entry read when the server counted them (a window shows only part of them), else of those shown.
 */
function consumeSummary(records: ConsumedRecord[], totals?: { committed: number; aborted: number; open: number; markers: number }): string {
  const count = (status: ConsumedRecord['status']) => records.filter((r) => r.status === status).length;
  const t = totals ?? { committed: count('committed'), aborted: count('aborted'), open: count('open'), markers: count('marker') };
  const parts = [`${t.committed} committed`];
  if (t.aborted) parts.push(ansi.red(`${t.aborted} ABORTED`));
  if (t.open) parts.push(ansi.yellow(`${t.open} in open transactions`));
  parts.push(ansi.dim(`${t.markers} transaction markers`));
  const shown = totals && records.length < t.committed + t.aborted + t.open + t.markers ? ansi.dim(` (${records.length} shown)`) : '';
  return `${ansi.bold('total:')} ${parts.join(', ')}${shown}`;
}

export function formatRecord(raw: ConsumedRecord): string {
  const record = showControlCharactersDeep(raw);
  const where = `p${record.partition}@${record.offset}`;
  switch (record.status) {
    case 'marker': {
      // The protocol does not say which marker; a server that puts "commit"/"abort" in value is shown so.
      const kind = record.value === 'commit' || record.value === 'abort' ? record.value : 'transaction';
      return ansi.dim(`${where} ── ${kind} marker ──`);
    }
    case 'aborted':
      return ansi.red(`${where} ${record.key ?? 'null'} ${record.value ?? 'null'}  ABORTED`);
    case 'open':
      return ansi.yellow(`${where} ${record.key ?? 'null'} ${record.value ?? 'null'}  (transaction still open)`);
    case 'committed':
      return `${ansi.dim(where)} ${record.key ?? ansi.dim('null')} ${record.value ?? ansi.dim('null')}`;
  }
}

function colourTxnState(state: string): string {
  if (/ongoing|prepare/i.test(state)) return ansi.yellow(state);
  if (/abort/i.test(state)) return ansi.red(state);
  if (/commit/i.test(state)) return ansi.green(state);
  return state;
}
