/**
 * The complete programs of the lessons: fenced blocks whose meta has the word `program`, e.g.
 *
 *   ```ts program lab=single-stage title="upper-case.ts"
 *
 * `program` says "this block is a whole file that runs as it is" (type-checked in CI);
 * `lab=<id>` says "and it is an answer to that lab" (graded in CI, and it must pass).
 * Code that several programs share is shown once, as a block with `helper=<name>` (lesson 10.1.4's
 * partition slots, say); a program with `uses=<name>` is that program followed by the helper, and
 * is checked and graded as that one file. Other blocks are snippets and are not checked. See
 * AUTHORING.md.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const DOCS_DIR = path.join(ROOT, 'src/content/docs');

export interface LessonProgram {
  /** Lesson file, relative to the project root. */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  lab: string | null;
  code: string;
  /** A short name for test titles: `04-single-stage.mdx:99`. */
  name: string;
  /** The helper appended to the program (`uses=<name>`): where it is shown, and its first line in `code`. */
  helper?: { name: string; file: string; line: number; startsAt: number };
}

interface Block {
  file: string;
  line: number;
  lang: string;
  meta: string;
  code: string;
}

function mdxFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return mdxFiles(full);
    return /\.mdx?$/.test(entry.name) ? [full] : [];
  });
}

/** Every fenced code block of the lessons, with its meta. */
function lessonBlocks(dir: string): Block[] {
  const blocks: Block[] = [];
  for (const full of mdxFiles(dir).sort()) {
    const lines = fs.readFileSync(full, 'utf8').split('\n');
    for (let i = 0; i < lines.length; i++) {
      const open = /^(`{3,})(\w+)\s*(.*)$/.exec(lines[i]);
      if (!open) continue;
      const [, fence, lang, meta] = open;
      let end = i + 1;
      while (end < lines.length && lines[end].trimEnd() !== fence) end++;
      if (end >= lines.length) throw new Error(`${path.relative(ROOT, full)}:${i + 1}: unterminated code fence`);
      blocks.push({ file: path.relative(ROOT, full), line: i + 1, lang, meta, code: lines.slice(i + 1, end).join('\n') + '\n' });
      i = end;
    }
  }
  return blocks;
}

const metaValue = (meta: string, name: string) => new RegExp(`(?:^|\\s)${name}=([\\w-]+)`).exec(meta)?.[1] ?? null;

/** Every fenced block of the lessons whose meta contains the word `program`, each with the helper it uses. */
export function lessonPrograms(dir = DOCS_DIR): LessonProgram[] {
  const blocks = lessonBlocks(dir);
  const helpers = new Map<string, Block>();
  for (const block of blocks) {
    const name = metaValue(block.meta, 'helper');
    if (!name) continue;
    if (helpers.has(name)) throw new Error(`${block.file}:${block.line}: helper=${name} is already shown at ${helpers.get(name)!.file}:${helpers.get(name)!.line}`);
    helpers.set(name, block);
  }
  const programs: LessonProgram[] = [];
  for (const block of blocks) {
    const words = block.meta.replace(/"[^"]*"/g, '').split(/\s+/);
    if (!words.includes('program')) continue;
    const name = `${path.basename(block.file)}:${block.line}`;
    const program: LessonProgram = { file: block.file, line: block.line, lang: block.lang, lab: metaValue(block.meta, 'lab'), code: block.code, name };
    const uses = metaValue(block.meta, 'uses');
    if (uses) {
      const helper = helpers.get(uses);
      if (!helper) throw new Error(`${block.file}:${block.line}: uses=${uses}, but no lesson block has helper=${uses}`);
      program.helper = { name: uses, file: helper.file, line: helper.line, startsAt: block.code.split('\n').length };
      program.code = `${block.code}\n${helper.code}`;
    }
    programs.push(program);
  }
  return programs;
}

/** The lesson line a line of a program's code comes from (1-based), the helper's part included. */
export function lessonLine(program: LessonProgram, codeLine: number): { file: string; line: number } {
  const helper = program.helper;
  if (helper && codeLine > helper.startsAt) return { file: helper.file, line: helper.line + codeLine - helper.startsAt };
  return { file: program.file, line: program.line + codeLine };
}

/**
 * Type-checks programs as the strict TypeScript of this project (kafkajs's own types, @types/node,
 * @types/pg), each as its own module. Returns one line per error, naming the lesson and the line
 * in the lesson's source. TypeScript 7 (the project's compiler) has no JavaScript compiler API,
 * so the programs are written to a scratch folder and checked by its `tsc`.
 */
export function typeCheck(programs: LessonProgram[]): string[] {
  const dir = path.join(ROOT, '.kafkaiq', 'lesson-code');
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const byFile = new Map<string, LessonProgram>();
  for (const [n, program] of programs.entries()) {
    const name = `program-${n}.ts`;
    fs.writeFileSync(path.join(dir, name), program.code);
    byFile.set(name, program);
  }
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
        typeRoots: [path.join(ROOT, 'node_modules/@types')],
        lib: ['ES2023', 'DOM'],
        moduleDetection: 'force',
      },
      files: [...byFile.keys()],
    }),
  );
  const tsc = spawnSync(path.join(ROOT, 'node_modules/.bin/tsc'), ['-p', dir, '--pretty', 'false'], { encoding: 'utf8' });
  if (tsc.error) throw tsc.error;
  const errors: string[] = [];
  // tsc prints `<dir>/program-3.ts(12,5): error TS2345: message` (continuation lines are indented).
  for (const line of tsc.stdout.split('\n')) {
    const match = /^(?:.*[\\/])?(program-\d+\.ts)\((\d+),\d+\): error (TS\d+): (.*)$/.exec(line);
    if (match) {
      const at = lessonLine(byFile.get(match[1]!)!, Number(match[2]));
      errors.push(`${at.file}:${at.line}: ${match[3]} ${match[4]}`);
    } else if (line.trim() && !/^\s/.test(line)) {
      errors.push(line);
    }
  }
  if (tsc.status !== 0 && errors.length === 0) errors.push(`tsc exited ${tsc.status}: ${tsc.stderr.trim()}`);
  return errors;
}
