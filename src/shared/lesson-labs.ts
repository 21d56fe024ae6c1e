/**
 * Which lesson a lab belongs to. A lab may be embedded in several lessons (the single-stage lab
 * sits in 10.1.3, 10.1.4 and 10.1.8); its pass counts once, toward its home lesson only: the
 * lesson named after it (its file name contains the lab id, as 04-single-stage does), else the
 * first lesson in course order that lists it. The other lessons embed it for practice.
 *
 * Pure: the course overview (CourseProgress.astro) and the sidebar (overrides/Sidebar.astro) both
 * use it at build time, so they agree.
 */

export interface LessonLabs {
  /** Entry id, e.g. "10-1/04-single-stage". */
  id: string;
  /** Course order. */
  order: number | undefined;
  /** The labs the lesson's frontmatter lists (every lab it embeds). */
  labs: readonly string[];
}

/** Lab id -> the id of its home lesson. */
export function labHomes(lessons: readonly LessonLabs[]): Map<string, string> {
  const inOrder = [...lessons].sort((a, b) => (a.order ?? Infinity) - (b.order ?? Infinity) || a.id.localeCompare(b.id));
  const homes = new Map<string, string>();
  const slug = (id: string) => id.slice(id.lastIndexOf('/') + 1).replace(/^\d+-/, '');
  for (const lesson of inOrder) {
    for (const lab of lesson.labs) {
      if (slug(lesson.id).includes(lab)) homes.set(lab, lesson.id);
    }
  }
  for (const lesson of inOrder) {
    for (const lab of lesson.labs) if (!homes.has(lab)) homes.set(lab, lesson.id);
  }
  return homes;
}

/** The lesson's own labs (those whose home it is) and the ones it embeds for practice. */
export function splitLabs(lesson: LessonLabs, homes: ReadonlyMap<string, string>): { own: string[]; practice: string[] } {
  const own = lesson.labs.filter((lab) => homes.get(lab) === lesson.id);
  return { own, practice: lesson.labs.filter((lab) => !own.includes(lab)) };
}
