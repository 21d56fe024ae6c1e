// Attack: load a builtin the compile step refuses, in ways the compile step cannot see: a computed
// import() of node:sqlite (a database handle that Node's permission model does not gate; with it a
// program read the attempt store and wrote outside --allow-fs-write), process.getBuiltinModule,
// require through createRequire, Module._load, and a hook of its own put in front of the gate.
import { createRequire } from 'node:module';
// Names built at run time, so the compile step cannot see them (esbuild folds 'node:' + 'sqlite').
const name = (...parts: string[]) => parts.join(process.argv.length > 0 ? ':' : '');
const SQLITE = name('node', 'sqlite');
const tries: Record<string, () => unknown> = {
  'computed import()': () => import(SQLITE),
  'process.getBuiltinModule': () => (process as any).getBuiltinModule(SQLITE),
  'getBuiltinModule without prefix': () => (process as any).getBuiltinModule('sqlite'),
  'getBuiltinModule of v8': () => (process as any).getBuiltinModule('v8'),
  'createRequire require': () => createRequire(import.meta.url)(SQLITE),
  'Module._load': () => (createRequire(import.meta.url)('node:module') as any)._load(SQLITE),
  'a data: module': () => import(['data:text/javascript', `export * from "${SQLITE}"`].join(',')),
  'registerHooks in front': () =>
    (createRequire(import.meta.url)('node:module') as any).registerHooks({ resolve: (s: string, c: unknown, next: (s: string, c: unknown) => unknown) => next(s, c) }),
  'computed import() of vm': () => import(name('node', 'vm')),
};
const loaded: string[] = [];
const refused: string[] = [];
for (const [how, load] of Object.entries(tries)) {
  try {
    const module = await load();
    const db = (module as any)?.DatabaseSync;
    // With node:sqlite in hand, the escape itself: a database file outside --allow-fs-write.
    if (db) new db('/tmp/kafkaiq-gate-escape.sqlite').exec('create table if not exists t(x)');
    loaded.push(how);
    console.log('LOADED', how);
  } catch (err) {
    refused.push(how);
    console.log('REFUSED', how, (err as { code?: string }).code, String((err as Error).message).slice(0, 120));
  }
}
console.log('RESULT ' + JSON.stringify({ allowed: loaded.length > 0, refusal: refused.join(', '), loaded }));
await new Promise((r) => setTimeout(r, 60_000));
