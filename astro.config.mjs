// @ts-check
import { defineConfig } from 'astro/config';
import mdx from '@astrojs/mdx';
import starlight from '@astrojs/starlight';
import { fileURLToPath } from 'node:url';
import { monacoLazyCss } from './src/components/workbench/build/monaco-lazy-css.mjs';

// Starlight's search UI, loaded only when the search dialog opens (see the stand-in's comment).
const lazyPagefindUi = fileURLToPath(new URL('./src/components/search/lazy-pagefind-ui.ts', import.meta.url));

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
			pagefind: true,
			// src/pages/404.astro replaces Starlight's 404 route (see there why).
			disable404Route: true,
			customCss: ['./src/styles/kafkaiq.css'],
			lastUpdated: false,
			pagination: true,
			// The sidebar shows each lesson's labs passed and Predict score (see the override).
			// The skip links add one to each lab and its terminal (see the override).
			components: { Sidebar: './src/components/overrides/Sidebar.astro', SkipLink: './src/components/overrides/SkipLink.astro' },
			sidebar: [
				{ label: 'Course overview', link: '/' },
				{
					label: '10.1 Transactions & Exactly-Once Semantics',
					// Ordered by `sidebar.order` (defaults to the lesson's `order`, see src/content.config.ts).
					items: [{ autogenerate: { directory: '10-1' } }],
				},
			],
		}),
		// Explicit MDX (Starlight would add it otherwise). Keep it after starlight(): Starlight inserts
		// expressive-code right after itself, and expressive-code must run before MDX.
		mdx(),
	],
	// Keeps Monaco's CSS inside the lazily loaded workbench instead of on every page (see the plugin).
	vite: {
		plugins: [monacoLazyCss()],
		resolve: { alias: [{ find: /^@pagefind\/default-ui$/, replacement: lazyPagefindUi }] },
		build: {
			// Monaco (editor ~4 MB, TypeScript worker ~7 MB) is one lazily loaded chunk by design: it
			// ships only with a lab, when the lab scrolls into view.
			chunkSizeWarningLimit: 8_000,
			rolldownOptions: {
				onwarn(warning, warn) {
					// Astro 7 marks every MDX page's propagated assets with this directive and rolldown
					// warns that it drops it; harmless and known upstream (withastro/astro#18087).
					if (warning.code === 'MODULE_LEVEL_DIRECTIVE' && warning.message.includes('astro:head-inject')) return;
					warn(warning);
				},
			},
		},
	},
});
