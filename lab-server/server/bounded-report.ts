/**
 * A grade report crosses to the browser and into the attempt store: both get at most
 * MAX_REPORT_BYTES. The timeline goes first (it is the longest and least needed part), then long
 * strings in the checks' evidence are cut; the verdict and the checks themselves always stay.
 */
import type { GradeReport } from '../../src/shared/report.ts';

export const MAX_REPORT_BYTES = 1024 * 1024;
const MAX_STRING = 4_000;

const size = (report: GradeReport) => Buffer.byteLength(JSON.stringify(report));

export function boundReport(report: GradeReport, maxBytes = MAX_REPORT_BYTES): GradeReport {
  if (size(report) <= maxBytes) return report;
  let bounded: GradeReport = { ...report, timeline: report.timeline.slice(0, 500) };
  if (size(bounded) > maxBytes) bounded = { ...bounded, timeline: [] };
  if (size(bounded) > maxBytes) bounded = JSON.parse(JSON.stringify(bounded, (_key, value) => (typeof value === 'string' && value.length > MAX_STRING ? `${value.slice(0, MAX_STRING)} …` : value)));
  if (size(bounded) > maxBytes) {
    bounded = { ...bounded, checks: bounded.checks.map((c) => ({ ...c, ...('evidence' in c ? { evidence: [] } : {}) })) as GradeReport['checks'] };
  }
  bounded.message = `${bounded.message} (report shortened to ${Math.round(maxBytes / 1024)} KB)`;
  return bounded;
}
