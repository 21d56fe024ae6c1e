/**
 * The sidebar's progress badges (Sidebar.astro): per lesson link, "labs n/m" once a lab of it is
 * passed, and "checks right/total" once a Predict check of it is answered. Reads the same
 * localStorage shapes as the course overview: "kafkaiq:progress" { passed: { <labId>: <ISO> } }
 * (the workbench's storage.ts) and "kafkaiq:predict" { lessons: { <lesson>: { <check>: { correct } } } }
 * (Predict.astro). The final quiz's score reads "final quiz: right/total".
 */

interface LessonFacts {
  id: string;
  href: string;
  labs: string[];
  checks: number;
  /** The module's cumulative quiz (95-final-quiz). */
  finalQuiz?: boolean;
}

function readJson(key: string): Record<string, unknown> {
  try {
    const value = JSON.parse(localStorage.getItem(key) ?? '{}');
    return value && typeof value === 'object' ? value : {};
  } catch {
    return {}; // unreadable or unavailable storage: no progress to show
  }
}

function objectAt(value: Record<string, unknown>, key: string): Record<string, unknown> {
  const inner = value[key];
  return inner && typeof inner === 'object' ? (inner as Record<string, unknown>) : {};
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

/** Adds (or refreshes) the badges of every lesson link in the sidebar. */
export function decorateSidebar(host: HTMLElement): void {
  let lessons: LessonFacts[];
  try {
    lessons = JSON.parse(host.dataset.lessons ?? '[]') as LessonFacts[];
  } catch {
    return;
  }
  const passed = objectAt(readJson('kafkaiq:progress'), 'passed');
  const answers = objectAt(readJson('kafkaiq:predict'), 'lessons');
  const byPath = new Map(lessons.map((l) => [normalise(l.href), l]));
  for (const link of document.querySelectorAll<HTMLAnchorElement>('#starlight__sidebar a[href]')) {
    const lesson = byPath.get(normalise(link.getAttribute('href')!));
    if (!lesson) continue;
    link.querySelector('.kiq-side-progress')?.remove();
    const badges: HTMLElement[] = [];
    const labsPassed = lesson.labs.filter((lab) => Object.prototype.hasOwnProperty.call(passed, lab)).length;
    if (labsPassed > 0) {
      const done = labsPassed === lesson.labs.length;
      badges.push(badge(done ? '✓ labs' : `${labsPassed}/${lesson.labs.length} labs`, done ? 'complete' : 'partial', `${labsPassed} of ${lesson.labs.length} labs passed`));
    }
    const picks = Object.values(objectAt(answers, lesson.id));
    if (lesson.checks > 0 && picks.length > 0) {
      const right = picks.filter((p) => !!p && typeof p === 'object' && (p as { correct?: unknown }).correct === true).length;
      const score = `${right}/${lesson.checks}`;
      badges.push(
        badge(
          lesson.finalQuiz ? `final quiz: ${score}` : score,
          right === lesson.checks ? 'complete' : 'partial',
          `${lesson.finalQuiz ? 'Final quiz' : 'Predict checks'}: ${right} right at the first try, ${picks.length} of ${lesson.checks} answered`,
        ),
      );
    }
    if (!badges.length) continue;
    const holder = document.createElement('span');
    holder.className = 'kiq-side-progress';
    holder.append(...badges);
    link.append(holder);
  }
}
