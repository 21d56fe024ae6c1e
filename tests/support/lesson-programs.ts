/**
 * The lessons' programs, as CI checks them:
 *
 *   ```ts program title="lso-probe.ts"          a whole file that runs as it is (type-checked);
 *   ```ts part=single-stage:pipeline            a part of a lab's program (never a whole file);
 *
 * A lesson never prints a program that passes its lab. It shows the lab's program in parts: each
 * `part=<lab>:<section>` block replaces one section of labs/<lab>/starter.ts (the lines after a
 * `// ---- <section> ...` heading, up to the next `// ---- ` heading or the end of the file). The
 * starter with every part in place is one more program: type-checked, and graded against the lab
 * (it must pass). Code that several programs share is shown once, as a block with `helper=<name>`
 * (lesson 10.1.4's partition slots, say); a program or part with `uses=<name>` is followed by the
 * helper, and is checked and graded with it as one file. Other blocks are snippets and are not
 * checked. See AUTHORING.md.
 */
import fs from 'node:fs';
import path from 'node:path';
import { typeCheckPrograms } from './type-check.ts';

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
  /** A program assembled from parts: where each line of `code` comes from (index = line - 1). */
  origins?: { file: string; line: number }[];
  /** The lesson blocks it was assembled from (`part=<lab>:<section>`). */
  parts?: { file: string; line: number; section: string; code: string }[];
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

/** A block's words outside quoted values (`title="..."`). */
const metaWords = (meta: string) => meta.replace(/"[^"]*"/g, '').split(/\s+/);

/** `part=<lab>:<section>` of a block, or null. */
export function partOf(meta: string): { lab: string; section: string } | null {
  const match = /(?:^|\s)part=([\w-]+):([\w-]+)/.exec(meta);
  return match ? { lab: match[1]!, section: match[2]! } : null;
}

/** A starter's section headings: `// ---- <section> ...`, each up to the next `// ---- ` line. */
const SECTION = /^\s*\/\/ ---- ([a-z][\w-]*)\b/;

/**
 * The starter with each part in place of its section's body (the heading stays). `parts` maps a
 * section to its code and where it is shown; returns the file's lines with their origins.
 */
export function assembleStarter(
  starter: { file: string; code: string },
  parts: ReadonlyMap<string, { file: string; line: number; code: string }>,
): { code: string; origins: { file: string; line: number }[] } {
  const lines = starter.code.replace(/\n$/, '').split('\n');
  const headings = lines.flatMap((line, i) => (/^\s*\/\/ ---- /.test(line) ? [i] : []));
  const sections = new Map<string, { from: number; to: number }>();
  for (const [n, at] of headings.entries()) {
    const name = SECTION.exec(lines[at]!)?.[1];
    if (name) sections.set(name, { from: at + 1, to: headings[n + 1] ?? lines.length });
  }
  for (const [section, part] of parts) {
    if (!sections.has(section)) {
      throw new Error(`${part.file}:${part.line}: part ${section}: ${starter.file} has no section "// ---- ${section}" (it has: ${[...sections.keys()].join(', ') || 'none'})`);
    }
  }
  const code: string[] = [];
  const origins: { file: string; line: number }[] = [];
  const starterLine = (i: number) => {
    code.push(lines[i]!);
    origins.push({ file: starter.file, line: i + 1 });
  };
  for (let i = 0; i < lines.length; i++) {
    starterLine(i);
    const name = SECTION.exec(lines[i]!)?.[1];
    const part = name && headings.includes(i) ? parts.get(name) : undefined;
    if (!part) continue;
    const partLines = part.code.replace(/\n$/, '').split('\n');
    partLines.forEach((line, k) => {
      code.push(line);
      origins.push({ file: part.file, line: part.line + 1 + k });
    });
    const next = sections.get(name!)!.to;
    if (next < lines.length) {
      code.push('');
      origins.push({ file: part.file, line: part.line + partLines.length + 1 });
    }
    i = next - 1; // the section's own body is left out
  }
  return { code: `${code.join('\n')}\n`, origins };
}

/**
 * Every complete program of the lessons: the blocks marked `program`, each with the helper it
 * uses, then one program per lab that lessons show in parts (`part=<lab>:...`): the lab's starter
 * with the parts in place, graded against that lab.
 */
export function lessonPrograms(dir = DOCS_DIR): LessonProgram[] {
  const blocks = lessonBlocks(dir);
  const helpers = new Map<string, Block>();
  for (const block of blocks) {
    const name = metaValue(block.meta, 'helper');
    if (!name) continue;
    if (helpers.has(name)) throw new Error(`${block.file}:${block.line}: helper=${name} is already shown at ${helpers.get(name)!.file}:${helpers.get(name)!.line}`);
    helpers.set(name, block);
  }
  const withHelper = (program: LessonProgram, block: Block) => {
    const uses = metaValue(block.meta, 'uses');
    if (!uses) return;
    const helper = helpers.get(uses);
    if (!helper) throw new Error(`${block.file}:${block.line}: uses=${uses}, but no lesson block has helper=${uses}`);
    program.helper = { name: uses, file: helper.file, line: helper.line, startsAt: program.code.split('\n').length };
    // The blank line between the two, then the helper's lines.
    program.origins?.push({ file: helper.file, line: helper.line }, ...helper.code.split('\n').map((_, k) => ({ file: helper.file, line: helper.line + 1 + k })));
    program.code = `${program.code}\n${helper.code}`;
  };
  const programs: LessonProgram[] = [];
  const partsByLab = new Map<string, Block[]>();
  for (const block of blocks) {
    const part = partOf(block.meta);
    if (part) {
      if (metaWords(block.meta).includes('program')) throw new Error(`${block.file}:${block.line}: a block is a part or a program, not both`);
      partsByLab.set(part.lab, [...(partsByLab.get(part.lab) ?? []), block]);
      continue;
    }
    if (!metaWords(block.meta).includes('program')) continue;
    const lab = metaValue(block.meta, 'lab');
    if (lab) {
      throw new Error(`${block.file}:${block.line}: a complete program answers lab ${lab}: a lesson shows a lab's program in parts (part=${lab}:<section>), assembled into labs/${lab}/starter.ts`);
    }
    const program: LessonProgram = { file: block.file, line: block.line, lang: block.lang, lab: null, code: block.code, name: `${path.basename(block.file)}:${block.line}` };
    withHelper(program, block);
    programs.push(program);
  }
  for (const [lab, parts] of partsByLab) {
    const first = parts[0]!;
    const starterFile = `labs/${lab}/starter.ts`;
    const starterPath = path.join(ROOT, starterFile);
    if (!fs.existsSync(starterPath)) throw new Error(`${first.file}:${first.line}: part=${lab}:...: there is no ${starterFile}`);
    const bySection = new Map<string, { file: string; line: number; code: string }>();
    for (const block of parts) {
      const { section } = partOf(block.meta)!;
      if (bySection.has(section)) throw new Error(`${block.file}:${block.line}: part=${lab}:${section} is already shown at ${bySection.get(section)!.file}:${bySection.get(section)!.line}`);
      bySection.set(section, block);
    }
    const users = parts.filter((p) => metaValue(p.meta, 'uses'));
    if (users.length > 1 && new Set(users.map((p) => metaValue(p.meta, 'uses'))).size > 1) throw new Error(`${users[1]!.file}:${users[1]!.line}: the parts of lab ${lab} use different helpers`);
    const assembled = assembleStarter({ file: starterFile, code: fs.readFileSync(starterPath, 'utf8') }, bySection);
    const program: LessonProgram = {
      file: first.file,
      line: first.line,
      lang: first.lang,
      lab,
      code: assembled.code,
      name: `${path.basename(first.file)}:${first.line} parts in ${starterFile}`,
      origins: assembled.origins,
      parts: parts.map((p) => ({ file: p.file, line: p.line, section: partOf(p.meta)!.section, code: p.code })),
    };
    if (users[0]) withHelper(program, users[0]);
    programs.push(program);
  }
  return programs;
}

/** The lesson (or starter) line a line of a program's code comes from (1-based), the helper's part included. */
export function lessonLine(program: LessonProgram, codeLine: number): { file: string; line: number } {
  const origin = program.origins?.[codeLine - 1];
  if (origin) return origin;
  const helper = program.helper;
  if (helper && codeLine > helper.startsAt) return { file: helper.file, line: helper.line + codeLine - helper.startsAt };
  return { file: program.file, line: program.line + codeLine };
}

/**
 * Type-checks lesson programs (tests/support/type-check.ts). Returns one line per error, naming
 * the lesson and the line in the lesson's source.
 */
export function typeCheck(programs: LessonProgram[]): string[] {
  const byFile = new Map<string, LessonProgram>(programs.map((program, n) => [`program-${n}.ts`, program]));
  const { errors, other } = typeCheckPrograms('lesson-code', new Map([...byFile].map(([name, program]) => [name, program.code])));
  return [
    ...errors.map((e) => {
      const at = lessonLine(byFile.get(e.file)!, e.line);
      return `${at.file}:${at.line}: ${e.code} ${e.message}`;
    }),
    ...other,
  ];
}
