/**
 * The class view's pages and exports, rendered on the server as plain HTML (the page's policy
 * allows no script): the roster (sort, filter, pages), one learner's every attempt with its code
 * and report, the per-lab figures, and both as CSV. Pure: data in, text out.
 */
import { htmlPaint, renderReport } from '../../src/shared/format-report.ts';
import { ROSTER_SORTS, type LabFigures, type LearnerDetail, type RosterPage, type RosterQuery, type RosterSort } from './class-queries.ts';

export const CLASS_VIEW_PATH = '/instructor';
export const CLASS_PATHS = {
  roster: CLASS_VIEW_PATH,
  labs: `${CLASS_VIEW_PATH}/labs`,
  learner: `${CLASS_VIEW_PATH}/learner/`,
  rosterCsv: `${CLASS_VIEW_PATH}/roster.csv`,
  labsCsv: `${CLASS_VIEW_PATH}/labs.csv`,
  signOut: `${CLASS_VIEW_PATH}/sign-out`,
} as const;
/** Learners per page of the class view. */
export const ROSTER_PAGE_SIZE = 50;

const SORT_NAMES: Record<RosterSort, string> = { name: 'name', attempts: 'most attempts', passed: 'most labs passed', last: 'latest activity' };

export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The roster query a URL asks for (anything unknown is ignored). */
export function rosterQueryOf(url: URL): RosterQuery & { page: number } {
  const page = Math.max(1, /^\d{1,6}$/.test(url.searchParams.get('page') ?? '') ? Number(url.searchParams.get('page')) : 1);
  const sort = ROSTER_SORTS.find((s) => s === url.searchParams.get('sort'));
  const name = (url.searchParams.get('name') ?? '').slice(0, 40).trim();
  const lab = /^[a-z0-9-]{1,60}$/.test(url.searchParams.get('lab') ?? '') ? url.searchParams.get('lab')! : undefined;
  return { page, offset: (page - 1) * ROSTER_PAGE_SIZE, limit: ROSTER_PAGE_SIZE, ...(sort ? { sort } : {}), ...(name ? { name } : {}), ...(lab ? { lab } : {}) };
}

function nav(current: 'roster' | 'labs' | 'learner'): string {
  const item = (key: 'roster' | 'labs', href: string, text: string) => (key === current ? `<strong>${text}</strong>` : `<a href="${href}">${text}</a>`);
  return `<nav class="top" aria-label="Class view">${item('roster', CLASS_PATHS.roster, 'Learners')} · ${item('labs', CLASS_PATHS.labs, 'Labs')} · export <a href="${CLASS_PATHS.rosterCsv}">roster.csv</a>, <a href="${CLASS_PATHS.labsCsv}">labs.csv</a>
<form method="post" action="${CLASS_PATHS.signOut}"><button type="submit">Sign out</button></form></nav>`;
}

const learnerName = (l: { displayName: string | null; label: string }) => (l.displayName ? `${escapeHtml(l.displayName)} <small>(${l.label})</small>` : escapeHtml(l.label));
const learnerHref = (label: string) => `${CLASS_PATHS.learner}${label.replace(/^learner /, '')}`;

/** The roster page: filters, then one page of learners. */
export function rosterPage(roster: RosterPage, query: RosterQuery & { page: number }, labs: readonly string[]): string {
  const pages = Math.max(1, Math.ceil(roster.total / ROSTER_PAGE_SIZE));
  const option = (value: string, text: string, selected: boolean) => `<option value="${escapeHtml(value)}"${selected ? ' selected' : ''}>${escapeHtml(text)}</option>`;
  const filters = `<form method="get" action="${CLASS_PATHS.roster}" class="filters">
<label>Name contains <input name="name" maxlength="40" value="${escapeHtml(query.name ?? '')}"></label>
<label>Graded lab <select name="lab">${option('', 'any', !query.lab)}${labs.map((l) => option(l, l, l === query.lab)).join('')}</select></label>
<label>Sort by <select name="sort">${ROSTER_SORTS.map((s) => option(s, SORT_NAMES[s], s === (query.sort ?? 'name'))).join('')}</select></label>
<button type="submit">Show</button></form>`;
  const kept = new URLSearchParams({ ...(query.name ? { name: query.name } : {}), ...(query.lab ? { lab: query.lab } : {}), ...(query.sort ? { sort: query.sort } : {}) });
  const link = (n: number, text: string) => `<a href="${CLASS_PATHS.roster}?${new URLSearchParams([...kept, ['page', String(n)]])}">${text}</a>`;
  const pager = (where: string) =>
    `<nav aria-label="Pages (${where})">Page ${query.page} of ${pages}${query.page > 1 ? ` · ${link(query.page - 1, 'previous')}` : ''}${query.page < pages ? ` · ${link(query.page + 1, 'next')}` : ''}</nav>`;
  if (roster.total === 0) return `${nav('roster')}${filters}<p>No learner ${kept.size ? 'matches these filters' : 'has graded a lab yet'}.</p>`;
  if (roster.learners.length === 0) return `${nav('roster')}${filters}<p>Page ${query.page} is past the last page (${pages}): ${link(pages, `go to page ${pages}`)}.</p>`;
  const rows = roster.learners.map((learner) => {
    const passed = learner.passedLabs.length ? learner.passedLabs.map(escapeHtml).join(', ') : '<em>none yet</em>';
    return `<tr><td><a href="${learnerHref(learner.label)}">${learnerName(learner)}</a></td><td>${passed}</td><td>${learner.attempts}</td><td>${learner.lessonsComplete}</td><td>${escapeHtml(learner.lastActivity)}</td><td>${revealsCell(learner.reveals)}</td></tr>`;
  });
  const first = query.offset + 1;
  return `${nav('roster')}${filters}<p>${roster.total} learner${roster.total === 1 ? '' : 's'} with a grade (${first}-${first + roster.learners.length - 1} here). Passed means a passing full grade.</p>${pager('top')}
<table><thead><tr><th>Learner</th><th>Labs passed</th><th>Attempts</th><th>Lessons complete</th><th>Last activity</th><th>Reference solution shown</th></tr></thead><tbody>${rows.join('')}</tbody></table>${pager('bottom')}`;
}

function revealsCell(reveals: LearnerDetail['reveals']): string {
  // One line per lab: the first reveal (the list is newest first) tells whether it came before their pass.
  const first = new Map<string, LearnerDetail['reveals'][number]>();
  for (const reveal of reveals) first.set(reveal.lab, reveal);
  const lines = [...first.values()].map((r) => `${escapeHtml(r.lab)}: ${r.beforePass ? '<strong>before passing</strong>' : 'after passing'} <small>${escapeHtml(r.at)}</small>`);
  return lines.join('<br>') || '<em>none</em>';
}

/** One learner: every attempt, newest first, with its report and the code it graded. */
export function learnerPage(learner: LearnerDetail): string {
  const attempts = learner.attempts.map(({ id, at, report, code }) => {
    const verdict = `${report.verdict.toUpperCase()}${report.quick ? ' (quick)' : ''}${report.replay ? ' (replay)' : ''}`;
    const program = code === null ? '<p><small>Its code is no longer kept (only the newest attempts of each lab keep theirs).</small></p>' : `<details><summary>Code</summary><pre>${escapeHtml(code)}</pre></details>`;
    return `<section><h3>#${id} ${escapeHtml(report.lab)}: ${verdict} <small>${escapeHtml(at)}</small></h3><details><summary>Report</summary><pre>${renderReport(report, htmlPaint).join('\n')}</pre></details>${program}</section>`;
  });
  return `${nav('learner')}<h2>${learnerName(learner)}</h2>${progressTable(learner.progress)}<h2>Attempts</h2><p>${learner.attempts.length} attempt${learner.attempts.length === 1 ? '' : 's'}, newest first. Reference solutions shown: ${revealsCell(learner.reveals)}</p>${attempts.join('')}`;
}

/** The learner's lessons as their browser last reported them. */
function progressTable(progress: LearnerDetail['progress']): string {
  if (!progress || Object.keys(progress.lessons).length === 0) return '<p>No lesson progress reported yet (it comes from the learner\'s browser when they open a lesson).</p>';
  const rows = Object.entries(progress.lessons).map(
    ([id, l]) =>
      `<tr><td>${escapeHtml(id.replace(/^10-1\//, ''))}</td><td>${l.opened ? 'yes' : 'no'}</td><td>${l.checks ? `${l.right}/${l.checks} right (${l.answered} answered)` : '–'}</td><td>${l.labs ? `${l.labsPassed}/${l.labs}` : '–'}</td><td>${l.complete ? '<strong>complete</strong>' : ''}</td></tr>`,
  );
  const complete = Object.values(progress.lessons).filter((l) => l.complete).length;
  return `<h2>Lessons</h2><p>${complete} of ${rows.length} complete, as the learner's browser last reported.</p><table><thead><tr><th>Lesson</th><th>Opened</th><th>Checks</th><th>Labs passed</th><th></th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

/** The labs page: how the class does in each lab. */
export function labsPage(labs: readonly LabFigures[]): string {
  if (labs.length === 0) return `${nav('labs')}<p>No lab has been graded yet.</p>`;
  const rows = labs.map((lab) => {
    const rate = lab.learners ? Math.round((100 * lab.passedLearners) / lab.learners) : 0;
    const checks = lab.failingChecks.map((c) => `${escapeHtml(c.check)} (${c.failures})`).join(', ') || '<em>none failed</em>';
    const learners = `<a href="${CLASS_PATHS.roster}?${new URLSearchParams({ lab: lab.lab })}">${lab.learners}</a>`;
    return `<tr><td>${escapeHtml(lab.lab)}</td><td>${learners}</td><td>${lab.attempts}</td><td>${lab.passedLearners} (${rate}%)</td><td>${lab.medianAttemptsToPass ?? '–'}</td><td>${checks}</td></tr>`;
  });
  return `${nav('labs')}<table><thead><tr><th>Lab</th><th>Learners</th><th>Attempts</th><th>Passed (rate)</th><th>Median attempts to pass</th><th>Checks failing most</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

/**
 * One CSV cell: quoted, and a cell a spreadsheet would read as a formula (= + - @, tab, CR at the
 * start) gets a leading apostrophe, so a learner's name cannot run in the instructor's spreadsheet.
 */
export function csvCell(value: string | number | null): string {
  const text = value === null ? '' : String(value);
  const safe = /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
  return `"${safe.replace(/"/g, '""')}"`;
}

const csv = (rows: Array<Array<string | number | null>>) => rows.map((row) => row.map(csvCell).join(',')).join('\r\n') + '\r\n';

export function rosterCsv(learners: RosterPage['learners']): string {
  return csv([
    ['learner', 'display name', 'attempts', 'labs passed', 'lessons complete', 'last activity', 'reference solutions shown before passing'],
    ...learners.map((l) => [l.label, l.displayName, l.attempts, l.passedLabs.join(' '), l.lessonsComplete, l.lastActivity, [...new Set(l.reveals.filter((r) => r.beforePass).map((r) => r.lab))].join(' ')]),
  ]);
}

export function labsCsv(labs: readonly LabFigures[]): string {
  return csv([
    ['lab', 'learners', 'attempts', 'learners passed', 'pass rate', 'median attempts to pass', 'checks failing most'],
    ...labs.map((l) => [l.lab, l.learners, l.attempts, l.passedLearners, l.learners ? (l.passedLearners / l.learners).toFixed(3) : '0', l.medianAttemptsToPass, l.failingChecks.map((c) => `${c.check}:${c.failures}`).join(' ')]),
  ]);
}
