import { defineCollection } from 'astro:content';
import { z } from 'astro/zod';
import type { Loader, LoaderContext } from 'astro/loaders';
import { docsLoader, i18nLoader } from '@astrojs/starlight/loaders';
import { docsSchema, i18nSchema } from '@astrojs/starlight/schema';

/**
 * Lesson frontmatter contract for module 10.1.
 *
 * Every page under src/content/docs/10-1/ (entry id "10-1/…") MUST set `module`, `order` and
 * `summary`; `labs` is optional (defaults to []). The course overview (index) and any other page
 * outside 10-1/ may omit them.
 */

/** Entries whose id starts with this prefix are lessons and must carry the lesson fields. */
export const LESSON_ID_PREFIX = '10-1/';

/** Internal marker the loader below injects so the schema can see which entry it validates. */
const ENTRY_ID_KEY = '__kafkaiqEntryId';

const lessonFields = z.object({
	module: z
		.string()
		.regex(/^10\.1(\.\d+){1,2}$/, {
			message: 'module must look like "10.1.4" or "10.1.4.2" (a lesson of module 10.1)',
		})
		.describe('Course module number of this lesson, e.g. "10.1.4" or "10.1.4.2".')
		.optional(),
	order: z
		.number({ error: 'order must be a number, e.g. order: 4' })
		.int({ message: 'order must be an integer' })
		.positive({ message: 'order must be a positive integer (1, 2, 3, …)' })
		.describe('Position of the lesson in the course (1-based). Also the default sidebar order.')
		.optional(),
	summary: z
		.string()
		.trim()
		.min(1, { message: 'summary must be a non-empty sentence' })
		.describe('One-sentence summary shown in the course overview.')
		.optional(),
	labs: z
		.array(
			z.string().regex(/^[a-z0-9-]+$/, {
				message: 'lab ids use only a-z, 0-9 and "-" (the folder name under labs/)',
			}),
		)
		.default([])
		.describe('Ids of the labs in this lesson (folders under labs/). A lesson is complete when all pass.'),
	[ENTRY_ID_KEY]: z.string().optional(),
});

const REQUIRED_FOR_LESSONS = {
	module: 'module: "10.1.4"',
	order: 'order: 4',
	summary: 'summary: One sentence.',
} as const;

// A refinement, not a transform: Starlight deep-merges an `extend` schema into its own only while it
// is still a plain object (a zod 4 transform is a pipe, which would replace Starlight's fields).
const lessonSchema = lessonFields.superRefine((data, ctx) => {
	if (!data[ENTRY_ID_KEY]?.startsWith(LESSON_ID_PREFIX)) return;
	for (const [field, example] of Object.entries(REQUIRED_FOR_LESSONS)) {
		if (data[field as keyof typeof REQUIRED_FOR_LESSONS] === undefined) {
			ctx.addIssue({
				code: 'custom',
				path: [field],
				message: `"${field}" is required in the frontmatter of every 10.1 lesson (e.g. ${example})`,
			});
		}
	}
});

/**
 * Starlight's docs loader, with two additions:
 * - it tells the schema the entry id (so lessons under 10-1/ can be held to the strict contract);
 * - a lesson without `sidebar.order` is placed by its `order`.
 */
function kafkaiqDocsLoader(): Loader {
	const base = docsLoader();
	return {
		...base,
		load: (context: LoaderContext) =>
			base.load({
				...context,
				parseData: async (props) => {
					const data = { ...props.data, [ENTRY_ID_KEY]: props.id };
					const parsed = (await context.parseData({ ...props, data })) as Record<string, any>;
					delete parsed[ENTRY_ID_KEY];
					if (
						parsed.sidebar &&
						parsed.sidebar.order === undefined &&
						typeof parsed.order === 'number'
					) {
						parsed.sidebar = { ...parsed.sidebar, order: parsed.order };
					}
					return parsed as typeof props.data;
				},
			}),
	};
}

export const collections = {
	// Starlight's UI strings (src/content/i18n/en.json): declared so the build does not warn about a
	// missing collection, and where the course words its search and 404 texts.
	i18n: defineCollection({ loader: i18nLoader(), schema: i18nSchema() }),
	docs: defineCollection({
		loader: kafkaiqDocsLoader(),
		schema: docsSchema({ extend: lessonSchema }),
	}),
};
