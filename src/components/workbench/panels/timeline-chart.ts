/**
 * A small inline SVG of a graded run: one lane per instance (and the broker), with commits,
 * aborts, starts/exits and the faults the grader injected, on a shared time axis.
 */
import type { GradeReport } from '../../../shared/report.ts';
import { svg } from '../dom.ts';
import { landingNote } from '../../../shared/fault-landing.ts';

const WIDTH = 640;
const GUTTER = 52;
const LANE = 24;
const AXIS = 20;
const PAD = 6;

export function createTimelineChart(report: GradeReport): SVGSVGElement {
  const lanes = laneNames(report);
  const duration = Math.max(1, report.stats.durationMs, ...report.timeline.map((e) => e.atMs), ...report.faults.map((f) => f.atMs));
  const height = PAD + lanes.length * LANE + AXIS;
  const x = (atMs: number) => GUTTER + (Math.max(0, atMs) / duration) * (WIDTH - GUTTER - PAD);
  const laneY = (instance: string) => PAD + Math.max(0, lanes.indexOf(instance)) * LANE + LANE / 2;

  const commits = report.timeline.filter((e) => e.kind === 'commit').length;
  const aborts = report.timeline.filter((e) => e.kind === 'abort').length;
  const chart = svg('svg', {
    class: 'kiq-wb-timeline',
    viewBox: `0 0 ${WIDTH} ${height}`,
    role: 'img',
    'aria-label': `Timeline: ${commits} commits, ${aborts} aborts and ${report.faults.length} faults over ${(duration / 1000).toFixed(1)} s`,
  });

  lanes.forEach((lane) => {
    const y = laneY(lane);
    chart.append(
      svg('text', { x: GUTTER - 8, y: y + 4, 'text-anchor': 'end', class: 'kiq-tl-label' }, lane),
      svg('line', { x1: GUTTER, x2: WIDTH - PAD, y1: y, y2: y, class: 'kiq-tl-lane' }),
    );
  });

  // Axis with five ticks in seconds.
  const axisY = PAD + lanes.length * LANE + 4;
  for (let i = 0; i <= 4; i++) {
    const atMs = (duration * i) / 4;
    chart.append(svg('text', { x: x(atMs), y: axisY + 12, 'text-anchor': i === 0 ? 'start' : i === 4 ? 'end' : 'middle', class: 'kiq-tl-axis' }, `${(atMs / 1000).toFixed(1)} s`));
  }

  // Faults come from report.faults (they say where they hit); timeline 'fault' events repeat them.
  const events = report.faults.length ? report.timeline.filter((e) => e.kind !== 'fault') : report.timeline;
  for (const event of events) {
    const cx = x(event.atMs);
    const cy = laneY(event.instance);
    const title = svg('title', {}, `${(event.atMs / 1000).toFixed(2)} s · ${event.instance} · ${event.kind}${event.detail ? ` · ${event.detail}` : ''}`);
    switch (event.kind) {
      case 'commit':
        chart.append(svg('line', { x1: cx, x2: cx, y1: cy - 6, y2: cy + 6, class: 'kiq-tl-commit' }, title));
        break;
      case 'abort':
        chart.append(svg('path', { d: `M${cx - 4} ${cy - 4}L${cx + 4} ${cy + 4}M${cx + 4} ${cy - 4}L${cx - 4} ${cy + 4}`, class: 'kiq-tl-abort' }, title));
        break;
      case 'start':
        chart.append(svg('circle', { cx, cy, r: 3.5, class: 'kiq-tl-start' }, title));
        break;
      case 'exit':
        chart.append(svg('rect', { x: cx - 3, y: cy - 3, width: 6, height: 6, class: 'kiq-tl-exit' }, title));
        break;
      case 'wave':
        chart.append(svg('line', { x1: cx, x2: cx, y1: PAD, y2: PAD + lanes.length * LANE, class: 'kiq-tl-wave' }, title));
        break;
      case 'fault':
        chart.append(faultMarker(cx, cy, title));
        break;
    }
  }
  for (const fault of report.faults) {
    const where = fault.crashPoint ? ` at ${fault.crashPoint}` : '';
    const txn = fault.inTransaction === null ? '' : fault.inTransaction ? ' (transaction open)' : ' (no transaction open)';
    chart.append(faultMarker(x(fault.atMs), laneY(fault.instance), svg('title', {}, `${(fault.atMs / 1000).toFixed(2)} s · ${fault.kind} ${fault.instance}${where}${txn}${landingNote(fault)}`)));
  }
  return chart;
}

function faultMarker(cx: number, cy: number, title: SVGTitleElement) {
  return svg('path', { d: `M${cx} ${cy - 8}L${cx + 6} ${cy + 5}L${cx - 6} ${cy + 5}Z`, class: 'kiq-tl-fault' }, title);
}

/** i1, i2… in order, then anything else, then the broker. */
function laneNames(report: GradeReport): string[] {
  const names = new Set<string>([...report.timeline.filter((e) => e.kind !== 'wave').map((e) => e.instance), ...report.faults.map((f) => f.instance)]);
  const order = (name: string) => (name === 'broker' ? 1e9 : /^i(\d+)$/.test(name) ? Number(name.slice(1)) : 1e6);
  const lanes = [...names].sort((a, b) => order(a) - order(b) || a.localeCompare(b));
  return lanes.length ? lanes : ['i1'];
}
