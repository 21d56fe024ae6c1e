import type { FaultRecord } from './report.ts';

/**
 * How an aimed fault landed, or that it was the plan's unannounced kill, for the report text, the
 * terminal and the timeline ('' for any other fault). Its own module without zod, so the browser's terminal and timeline can use it.
 */
export function landingNote(fault: FaultRecord): string {
  if (fault.unannounced) return ' [unannounced: at a seeded moment]';
  if (!fault.aimedAt) return '';
  const attempt = fault.try ? `, try ${fault.try}` : '';
  return fault.landed === 'at-point' ? ` [hit its point${attempt}]` : ` [fell back: aimed at ${fault.aimedAt.join(' or ')}${attempt}]`;
}
