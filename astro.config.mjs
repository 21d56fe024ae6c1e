// @ts-check
import { defineConfig } from 'astro/config';
import mdx from '@astrojs/mdx';
import starlight from '@astrojs/starlight';
import { monacoLazyCss } from './src/components/workbench/build/monaco-lazy-css.mjs';

// Course-site shell for KafkaIQ. Static output into dist/, Pagefind search (Starlight default).
// The editor/terminal workbench is NOT part of the shell: it ships only with pages that render a lab.
// `@components/*` and `@shared/*` come from the tsconfig.json `paths` (Astro reads them itself).
export default defineConfig({
	output: 'static',
	outDir: './dist',
	integrations: [
		starlight({
			title: 'KafkaIQ',
			description:
				'Learn Apache Kafka exactly-once semantics by doing: write real kafkajs programs, run them against a real broker under injected faults, and let the grader show you the evidence.',
			tagline: 'Learn Kafka exactly-once semantics by doing, against a real broker.',
			pagefind: true,
			customCss: ['./src/styles/kafkaiq.css'],
			lastUpdated: false,
			pagination: true,
			sidebar: [
				{ label: 'Course overview', link: '/' },
				{
					label: '10.1 Transactions & Exactly-Once Semantics',
					// Ordered by `sidebar.order` (defaults to the lesson's `order`, see src/content.config.ts).
					autogenerate: { directory: '10-1' },
				},
			],
		}),
		// Explicit MDX (Starlight would add it otherwise). Keep it after starlight(): Starlight inserts
		// expressive-code right after itself, and expressive-code must run before MDX.
		mdx(),
	],
	// Keeps Monaco's CSS inside the lazily loaded workbench instead of on every page (see the plugin).
	vite: { plugins: [monacoLazyCss()] },
});
