/**
 * The sidebar's progress badges (Sidebar.astro): per lesson link, "✓ complete" once the lesson is
 * complete (lesson-status.ts: opened, every check answered, its own labs passed); until then "labs
 * n/m" once one of its own labs is passed, and "checks right/total" once a Predict check of it is
 * answered. A lab counts toward its home lesson only (src/shared/lesson-labs.ts). Reads the same
 * localStorage shapes as the course overview. The final quiz's score reads "final quiz: right/total".
 */
import { lessonStatus, recordVisit } from './lesson-status.ts';
import { sessionId } from '../workbench/session-id.ts';
import { PROGRESS_PATH } from '../../shared/api-paths.ts';
import type { ProgressReport } from '../../shared/progress.ts';

/** What this tab last told the lab server (sessionStorage): the same report is not sent twice. */
const SENT_KEY = 'kafkaiq:progress-sent';

interface LessonFacts {
  id: string;
  href: string;
  /** Its own labs (those whose home it is). */
  labs: string[];
  checks: number;
  /** The module's cumulative quiz (95-final-quiz). */
  finalQuiz?: boolean;
}

/** Path without a trailing slash, so /10-1/x and /10-1/x/ match. */
const normalise = (href: string) => new URL(href, location.href).pathname.replace(/\/+$/, '');

function badge(text: string, status: 'partial' | 'complete', title: string): HTMLElement {
  const el = document.createElement('span');
  el.className = 'kiq-side-progress__badge';
  el.dataset.status = status;
  el.textContent = text;
  el.title = title;
  return el;
}

function lessonsOf(host: HTMLElement): LessonFacts[] {
  try {
    return JSON.parse(host.dataset.lessons ?? '[]') as LessonFacts[];
  } catch {
    return [];
  }
}

/** Records that the page being shown, if it is a lesson, was opened. */
export function recordOpenedLesson(host: HTMLElement): void {
  const here = normalise(location.href);
  const lesson = lessonsOf(host).find((l) => normalise(l.href) === here);
  if (lesson) recordVisit(lesson.id);
}

/** Adds (or refreshes) the badges of every lesson link in the sidebar. */
export function decorateSidebar(host: HTMLElement): void {
  const lessons = lessonsOf(host);
  const byPath = new Map(lessons.map((l) => [normalise(l.href), l]));
  for (const link of document.querySelectorAll<HTMLAnchorElement>('#starlight__sidebar a[href]')) {
    const lesson = byPath.get(normalise(link.getAttribute('href')!));
    if (!lesson) continue;
    link.querySelector('.kiq-side-progress')?.remove();
    const badges: HTMLElement[] = [];
    const status = lessonStatus(lesson);
    const started = status.labsPassed > 0 || status.answered > 0;
    if (status.complete && started) {
      badges.push(badge('✓', 'complete', 'Complete: opened, every check answered and its labs passed'));
    } else {
      const { labsPassed } = status;
      if (labsPassed > 0) {
        const done = labsPassed === lesson.labs.length;
        badges.push(badge(done ? '✓ labs' : `${labsPassed}/${lesson.labs.length} labs`, done ? 'complete' : 'partial', `${labsPassed} of ${lesson.labs.length} labs passed; still to do: ${status.missing.join('; ') || 'nothing'}`));
      }
      if (lesson.checks > 0 && status.answered > 0) {
        const score = `${status.right}/${lesson.checks}`;
        badges.push(
          badge(
            lesson.finalQuiz ? `final quiz: ${score}` : score,
            status.right === lesson.checks ? 'complete' : 'partial',
            `${lesson.finalQuiz ? 'Final quiz' : 'Predict checks'}: ${status.right} right at the first try, ${status.answered} of ${lesson.checks} answered`,
          ),
        );
      }
    }
    if (!badges.length) continue;
    const holder = document.createElement('span');
    holder.className = 'kiq-side-progress';
    holder.append(...badges);
    link.append(holder);
  }
}

/**
 * Tells the lab server the learner's progress, for their instructor's class view, when it changed
 * since this tab last told it. Best effort: without a lab server (the static site alone) nothing
 * is lost, the next change tries again.
 */
export async function reportProgress(host: HTMLElement): Promise<void> {
  const lessons = lessonsOf(host);
  if (lessons.length === 0) return;
  const report: ProgressReport = { lessons: {} };
  for (const lesson of lessons) {
    const status = lessonStatus(lesson);
    report.lessons[lesson.id] = {
      opened: status.opened,
      answered: status.answered,
      right: status.right,
      checks: lesson.checks,
      labsPassed: status.labsPassed,
      labs: lesson.labs.length,
      complete: status.complete,
    };
  }
  const body = JSON.stringify(report);
  let sent: string | null = null;
  try {
    sent = sessionStorage.getItem(SENT_KEY);
  } catch {
    // No session storage: every change is sent.
  }
  if (sent === body) return;
  const response = await fetch(PROGRESS_PATH, { method: 'PUT', headers: { 'Content-Type': 'application/json', 'X-KafkaIQ-Session': sessionId() }, body }).catch(() => null); // no lab server: try at the next change
  if (!response?.ok) return;
  try {
    sessionStorage.setItem(SENT_KEY, body);
  } catch {
    // No session storage: the report goes again next time, which the server takes as the same.
  }
}
