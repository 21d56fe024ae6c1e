// @ts-check
/**
 * Vite plugin (registered in astro.config.mjs): the CSS files that Monaco's own modules import
 * (`import './suggestWidget.css'`) are turned into `?inline` strings attached by lazy-css.ts when
 * the module runs. Without it Astro links all of Monaco's CSS into the <head> of every lesson
 * (see lazy-css.ts for why). Only imports made from inside monaco-editor are touched.
 */
import { fileURLToPath } from 'node:url';

const PREFIX = '\0kafkaiq-lazy-css:';
// The virtual module is JavaScript: its id must not end in .css, or Vite's CSS plugin takes it.
const SUFFIX = '.js';
const ATTACH_MODULE = fileURLToPath(new URL('../lazy-css.ts', import.meta.url));

/**
 * Typed with Astro's own Vite types (astro's ViteUserConfig), not the top-level vite package's.
 * @typedef {Extract<NonNullable<import('astro').ViteUserConfig['plugins']>[number], { name: string }>} AstroVitePlugin
 * @returns {AstroVitePlugin}
 */
export function monacoLazyCss() {
	return {
		name: 'kafkaiq:monaco-lazy-css',
		enforce: 'pre',
		async resolveId(source, importer, options) {
			if (!importer || !source.endsWith('.css') || !importer.includes('/node_modules/monaco-editor/')) return null;
			const resolved = await this.resolve(source, importer, { ...options, skipSelf: true });
			return resolved ? PREFIX + resolved.id + SUFFIX : null;
		},
		load(id) {
			if (!id.startsWith(PREFIX)) return null;
			const file = id.slice(PREFIX.length, -SUFFIX.length);
			return [
				`import css from ${JSON.stringify(`${file}?inline`)};`,
				`import { attachCss } from ${JSON.stringify(ATTACH_MODULE)};`,
				'attachCss(css);',
			].join('\n');
		},
	};
}
