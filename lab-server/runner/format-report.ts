export { formatReport } from '../../src/shared/format-report.ts';
