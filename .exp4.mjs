import fs from 'node:fs';
const { PGlite } = await import('@electric-sql/pglite');
let t = performance.now();
const db2 = await PGlite.create({ loadDataDir: new Blob([fs.readFileSync('/tmp/dbexp/dump.tar')]) });
console.log('ready', Math.round(performance.now() - t));
await db2.query('select 1');
await db2.close();
