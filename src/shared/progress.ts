/**
 * A learner's lesson progress as their browser computes it (components/overrides/lesson-status.ts:
 * opened, Predict checks answered and right, own labs passed) and tells the lab server, so their
 * instructor's class view can show it. The browser's word only ever describes the learner to their
 * instructor; it grades nothing (passes come from the server's own attempts).
 */
import { z } from 'zod';

export { PROGRESS_PATH } from './api-paths.ts';
/** A progress report is a few KB for the whole module; anything much larger is not one. */
export const MAX_PROGRESS_BYTES = 32 * 1024;

const count = z.number().int().min(0).max(500);

export const lessonProgressSchema = z
  .object({
    opened: z.boolean().describe('The learner opened the lesson'),
    answered: count.describe('Predict checks answered'),
    right: count.describe('Predict checks right at the first try'),
    checks: count.describe('Predict checks the lesson has'),
    labsPassed: count.describe('Its own labs the browser saw passed'),
    labs: count.describe('Its own labs'),
    complete: z.boolean().describe('Opened, every check answered and its labs passed'),
  })
  .strict();

export const progressReportSchema = z
  .object({
    lessons: z
      .record(z.string().regex(/^10-1\/[a-z0-9-]{1,80}$/), lessonProgressSchema)
      .refine((lessons) => Object.keys(lessons).length <= 200, { message: 'at most 200 lessons' })
      .describe('Per lesson id, as the course lists them'),
  })
  .strict();

export type LessonProgress = z.infer<typeof lessonProgressSchema>;
export type ProgressReport = z.infer<typeof progressReportSchema>;
