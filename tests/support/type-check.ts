/**
 * Type-checks programs as the strict TypeScript of this project (kafkajs's own types, @types/node,
 * @types/pg), each as its own module. TypeScript 7 (the project's compiler) has no JavaScript
 * compiler API, so the programs are written to a scratch folder under .kafkaiq/ (inside the
 * repository, so their imports resolve from its node_modules) and checked by its `tsc`.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT_DIR } from '../../lab-server/core/paths.ts';

export interface TypeError {
  /** The name the program was given. */
  file: string;
  line: number;
  code: string;
  message: string;
}

/** `programs`: file name (e.g. program-3.ts) to source. Returns every error; `other` holds lines tsc printed that name no program. */
export function typeCheckPrograms(scratch: string, programs: ReadonlyMap<string, string>): { errors: TypeError[]; other: string[] } {
  const dir = path.join(ROOT_DIR, '.kafkaiq', scratch);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  for (const [name, code] of programs) fs.writeFileSync(path.join(dir, name), code);
  fs.writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'ESNext',
        moduleResolution: 'Bundler',
        strict: true,
        skipLibCheck: true,
        noEmit: true,
        types: ['node'],
        typeRoots: [path.join(ROOT_DIR, 'node_modules/@types')],
        lib: ['ES2023', 'DOM'],
        moduleDetection: 'force',
      },
      files: [...programs.keys()],
    }),
  );
  const tsc = spawnSync(path.join(ROOT_DIR, 'node_modules/.bin/tsc'), ['-p', dir, '--pretty', 'false'], { encoding: 'utf8' });
  if (tsc.error) throw tsc.error;
  const errors: TypeError[] = [];
  const other: string[] = [];
  // tsc prints `<dir>/program-3.ts(12,5): error TS2345: message` (continuation lines are indented).
  for (const line of tsc.stdout.split('\n')) {
    const match = /^(?:.*[\\/])?([^\\/(]+\.ts)\((\d+),\d+\): error (TS\d+): (.*)$/.exec(line);
    if (match && programs.has(match[1]!)) errors.push({ file: match[1]!, line: Number(match[2]), code: match[3]!, message: match[4]! });
    else if (line.trim() && !/^\s/.test(line)) other.push(line);
  }
  if (tsc.status !== 0 && errors.length === 0 && other.length === 0) other.push(`tsc exited ${tsc.status}: ${tsc.stderr.trim()}`);
  return { errors, other };
}
