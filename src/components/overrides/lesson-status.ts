/**
 * Whether a lesson is complete, for the course overview (CourseProgress.astro) and the sidebar
 * (sidebar-progress.ts): it was opened, its Predict checks (its quiz) were all answered, and its own
 * labs were passed (src/shared/lesson-labs.ts: a lab counts toward its home lesson only). Read from
 * localStorage:
 *   "kafkaiq:visited"  { lessons: { <lesson id>: <ISO> } }       written here when a lesson is opened
 *   "kafkaiq:predict"  { lessons: { <lesson id>: { <check>: { correct } } } }   (Predict.astro)
 *   "kafkaiq:progress" { passed: { <lab id>: <ISO> } }            (workbench/storage.ts)
 */

export const VISITED_KEY = 'kafkaiq:visited';
export const PREDICT_KEY = 'kafkaiq:predict';
export const PROGRESS_KEY = 'kafkaiq:progress';

export interface LessonFacts {
  id: string;
  /** The labs whose home this lesson is. */
  labs: string[];
  /** How many Predict checks it has. */
  checks: number;
}

export interface LessonStatus {
  opened: boolean;
  /** Checks answered (right or not) and right at the first try. */
  answered: number;
  right: number;
  labsPassed: number;
  complete: boolean;
  /** What is left, in words ("answer 2 more checks", "pass the lab copy"). */
  missing: string[];
}

function readJson(key: string): Record<string, unknown> {
  try {
    const value = JSON.parse(localStorage.getItem(key) ?? '{}');
    return value && typeof value === 'object' ? value : {};
  } catch {
    return {}; // unreadable or unavailable storage: nothing recorded
  }
}

function objectAt(value: Record<string, unknown>, key: string): Record<string, unknown> {
  const inner = value[key];
  return inner && typeof inner === 'object' ? (inner as Record<string, unknown>) : {};
}

export function lessonStatus(lesson: LessonFacts): LessonStatus {
  const visited = objectAt(readJson(VISITED_KEY), 'lessons');
  const passed = objectAt(readJson(PROGRESS_KEY), 'passed');
  const picks = Object.values(objectAt(objectAt(readJson(PREDICT_KEY), 'lessons'), lesson.id));
  const opened = Object.prototype.hasOwnProperty.call(visited, lesson.id);
  const answered = Math.min(lesson.checks, picks.length);
  const right = picks.filter((p) => !!p && typeof p === 'object' && (p as { correct?: unknown }).correct === true).length;
  const unpassed = lesson.labs.filter((lab) => !Object.prototype.hasOwnProperty.call(passed, lab));
  const missing: string[] = [];
  if (!opened) missing.push('open the lesson');
  if (answered < lesson.checks) missing.push(`answer ${lesson.checks - answered} more check${lesson.checks - answered === 1 ? '' : 's'}`);
  if (unpassed.length) missing.push(`pass the lab${unpassed.length === 1 ? '' : 's'} ${unpassed.join(', ')}`);
  return { opened, answered, right, labsPassed: lesson.labs.length - unpassed.length, complete: missing.length === 0, missing };
}

/** Records that the lesson was opened (once; the first date stays). */
export function recordVisit(lessonId: string): void {
  try {
    const value = readJson(VISITED_KEY);
    const lessons = objectAt(value, 'lessons');
    if (Object.prototype.hasOwnProperty.call(lessons, lessonId)) return;
    lessons[lessonId] = new Date().toISOString();
    localStorage.setItem(VISITED_KEY, JSON.stringify({ lessons }));
  } catch {
    // Storage unavailable: the visit is simply not remembered.
  }
}
