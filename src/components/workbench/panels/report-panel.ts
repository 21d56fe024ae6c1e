/**
 * The grader's report as HTML below the terminal: verdict badge, message, each check with ✓/✗
 * and its evidence (collapsed), the run's numbers and a timeline of faults, commits and aborts.
 */
import type { GradeReport } from '../../../shared/report.ts';
import { h } from '../dom.ts';
import { createTimelineChart } from './timeline-chart.ts';

export interface ReportPanel {
  readonly element: HTMLElement;
  show(report: GradeReport): void;
}

const VERDICT_LABEL: Record<GradeReport['verdict'], string> = { pass: 'Pass', fail: 'Fail', inconclusive: 'Inconclusive', error: 'Error' };

export function createReportPanel(): ReportPanel {
  // Not a live region: the workbench announces the verdict in one sentence (verdictSentence).
  const element = h('section', { class: 'kiq-wb-report', hidden: true, 'aria-label': 'Grader report' });
  return {
    element,
    show(report) {
      element.replaceChildren(...renderReport(report));
      element.hidden = false;
    },
  };
}

/** The verdict in one sentence, for the workbench's live region: what a screen reader announces. */
export function verdictSentence(report: GradeReport): string {
  const failed = report.checks.filter((check) => !check.passed).map((check) => check.name);
  const kind = report.quick ? 'Quick grade' : 'Grade';
  const checks = failed.length ? ` Failed ${failed.length === 1 ? 'check' : 'checks'}: ${failed.join(', ')}.` : '';
  return `${kind} finished: ${VERDICT_LABEL[report.verdict]}. ${report.message}${checks}`;
}

function renderReport(report: GradeReport): Node[] {
  const s = report.stats;
  const replay = `grade${report.quick ? ' --quick' : ''} --seed ${report.seed}`;
  return [
    h(
      'header',
      { class: 'kiq-wb-report__head' },
      h('span', { class: 'kiq-wb-verdict', 'data-verdict': report.verdict }, VERDICT_LABEL[report.verdict]),
      h('p', { class: 'kiq-wb-report__message' }, report.message),
    ),
    h(
      'p',
      { class: 'kiq-wb-report__meta' },
      `${report.quick ? 'Quick grade' : 'Full grade'} · seed ${report.seed} · ${(s.durationMs / 1000).toFixed(1)} s · ${new Date(report.startedAt).toLocaleString()} · replay: `,
      h('code', {}, replay),
    ),
    h('ul', { class: 'kiq-wb-checks' }, ...report.checks.map(renderCheck)),
    h(
      'p',
      { class: 'kiq-wb-report__stats' },
      `${s.inputs} inputs (+${s.abortedInputs} in aborted seed transactions) · ${s.outputs} committed outputs · ${s.abortedRecords} writes aborted · ${s.restarts} restarts · ${s.selfExits} self-exits · ${report.faults.length} faults`,
    ),
    h(
      'figure',
      { class: 'kiq-wb-report__timeline' },
      createTimelineChart(report),
      h(
        'figcaption',
        {},
        legend('kiq-tl-commit', 'commit'),
        legend('kiq-tl-abort', 'abort'),
        legend('kiq-tl-fault', 'fault'),
        legend('kiq-tl-start', 'start'),
        legend('kiq-tl-exit', 'exit'),
      ),
    ),
  ];
}

function renderCheck(check: GradeReport['checks'][number]): HTMLElement {
  const item = h(
    'li',
    { class: 'kiq-wb-check', 'data-passed': String(check.passed) },
    h('span', { class: 'kiq-wb-check__mark', 'aria-label': check.passed ? 'passed' : 'failed' }, check.passed ? '✓' : '✗'),
    h('span', {}, h('strong', {}, check.name), ' ', check.summary),
  );
  if (check.evidence.length) {
    item.append(
      h(
        'details',
        { class: 'kiq-wb-check__evidence' },
        h('summary', {}, `Evidence (${check.evidence.length})`),
        h('ul', {}, ...check.evidence.map((line) => h('li', {}, h('code', {}, line)))),
      ),
    );
  }
  return item;
}

function legend(className: string, label: string): HTMLElement {
  return h('span', { class: `kiq-wb-legend ${className}` }, label);
}
