/**
 * The complete programs of the lessons: fenced blocks whose meta has the word `program`, e.g.
 *
 *   ```ts program lab=single-stage title="upper-case.ts"
 *
 * `program` says "this block is a whole file that runs as it is" (type-checked in CI);
 * `lab=<id>` says "and it is an answer to that lab" (graded in CI, and it must pass).
 * Blocks without `program` are snippets and are not checked. See AUTHORING.md.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

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
}

function mdxFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return mdxFiles(full);
    return /\.mdx?$/.test(entry.name) ? [full] : [];
  });
}

/** Every fenced block of the lessons whose meta contains the word `program`. */
export function lessonPrograms(dir = DOCS_DIR): LessonProgram[] {
  const programs: LessonProgram[] = [];
  for (const full of mdxFiles(dir).sort()) {
    const lines = fs.readFileSync(full, 'utf8').split('\n');
    for (let i = 0; i < lines.length; i++) {
      const open = /^(`{3,})(\w+)\s*(.*)$/.exec(lines[i]);
      if (!open) continue;
      const [, fence, lang, meta] = open;
      let end = i + 1;
      while (end < lines.length && lines[end].trimEnd() !== fence) end++;
      if (end >= lines.length) throw new Error(`${path.relative(ROOT, full)}:${i + 1}: unterminated code fence`);
      const words = meta.replace(/"[^"]*"/g, '').split(/\s+/);
      if (words.includes('program')) {
        const lab = /(?:^|\s)lab=([\w-]+)/.exec(meta)?.[1] ?? null;
        const file = path.relative(ROOT, full);
        programs.push({ file, line: i + 1, lang, lab, code: lines.slice(i + 1, end).join('\n') + '\n', name: `${path.basename(file)}:${i + 1}` });
      }
      i = end;
    }
  }
  return programs;
}

/**
 * Type-checks programs as the strict TypeScript of this project (kafkajs's own types, @types/node,
 * @types/pg), each as its own module. Returns one line per error, naming the lesson and the line
 * in the lesson's source.
 */
export function typeCheck(programs: LessonProgram[]): string[] {
  const virtual = new Map<string, LessonProgram>();
  for (const [n, program] of programs.entries()) {
    virtual.set(path.join(ROOT, 'tests/.lesson-code', `program-${n}.ts`), program);
  }
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    strict: true,
    skipLibCheck: true,
    noEmit: true,
    types: ['node'],
    lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
    moduleDetection: ts.ModuleDetectionKind.Force,
  };
  const host = ts.createCompilerHost(options);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (f) => virtual.has(path.resolve(f)) || fileExists.call(host, f);
  host.readFile = (f) => virtual.get(path.resolve(f))?.code ?? readFile.call(host, f);
  host.getSourceFile = (f, languageVersion, onError, shouldCreate) => {
    const program = virtual.get(path.resolve(f));
    if (program) return ts.createSourceFile(f, program.code, languageVersion, true);
    return getSourceFile.call(host, f, languageVersion, onError, shouldCreate);
  };
  const tsProgram = ts.createProgram([...virtual.keys()], options, host);
  const errors: string[] = [];
  for (const diagnostic of ts.getPreEmitDiagnostics(tsProgram)) {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    const source = diagnostic.file && virtual.get(path.resolve(diagnostic.file.fileName));
    if (source && diagnostic.start !== undefined) {
      const { line } = diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start);
      errors.push(`${source.file}:${source.line + 1 + line}: TS${diagnostic.code} ${message}`);
    } else {
      errors.push(`${diagnostic.file?.fileName ?? '(global)'}: TS${diagnostic.code} ${message}`);
    }
  }
  return errors;
}
