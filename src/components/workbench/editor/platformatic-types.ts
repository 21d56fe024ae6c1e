/**
 * @platformatic/kafka's own type definitions, for the editor when a learner picks that client.
 * Imported lazily (monaco-setup.ts loadClientTypes): Vite inlines the .d.ts files into this one
 * chunk, so a lesson page fetches it only when the picked client needs it. Its copy for
 * TypeScript 4 (dist/typescript-4) is left out.
 */
import nodeTypes from './platformatic-node-types.d.ts.txt?raw';

const files = import.meta.glob<string>(['/node_modules/@platformatic/kafka/dist/**/*.d.ts', '!/node_modules/@platformatic/kafka/dist/typescript-4/**'], {
  query: '?raw',
  import: 'default',
  eager: true,
});
const dynamicBuffer = import.meta.glob<string>('/node_modules/@platformatic/dynamic-buffer/dist/**/*.d.ts', { query: '?raw', import: 'default', eager: true });

/**
 * The package's declarations import each other as './x.ts'; the editor's TypeScript resolves
 * './x.js' to x.d.ts but not './x.ts' (the import would silently become `any`): rewrite them.
 */
const jsSpecifiers = (content: string) => content.replace(/((?:from\s+|import\(\s*)['"]\.{1,2}\/[^'"]+)\.ts(['"])/g, '$1.js$2');

/** [file URI, content] for every declaration file, laid out as node_modules would be. */
export function platformaticTypeFiles(): [string, string][] {
  const entries: [string, string][] = [...Object.entries(files), ...Object.entries(dynamicBuffer)].map(([path, content]) => [`file://${path}`, jsSpecifiers(content as string)]);
  // The packages' entry points, so `import ... from '@platformatic/kafka'` resolves like Node.
  entries.push(['file:///node_modules/@platformatic/kafka/package.json', JSON.stringify({ name: '@platformatic/kafka', type: 'module', types: './dist/index.d.ts' })]);
  entries.push(['file:///node_modules/@platformatic/kafka/index.d.ts', "export * from './dist/index.js';\n"]);
  entries.push(['file:///node_modules/@platformatic/dynamic-buffer/package.json', JSON.stringify({ name: '@platformatic/dynamic-buffer', type: 'module', types: './dist/index.d.ts' })]);
  entries.push(['file:///node_modules/@types/kafkaiq-platformatic-node/index.d.ts', nodeTypes]);
  return entries;
}
