import { ROOT_DIR } from '../../core/paths.ts';
import { showControlCharacters } from '../../../src/shared/sanitise.ts';

export interface OutputLimits {
  /** Total bytes of learner output forwarded per attempt. */
  maxBytes: number;
  /** Longest line forwarded; longer ones are cut. */
  maxLineChars: number;
}

export const DEFAULT_OUTPUT_LIMITS: OutputLimits = { maxBytes: 512 * 1024, maxLineChars: 2_000 };

/**
 * Every line a learner sees passes here: server paths are replaced, control characters shown
 * escaped (the one sanitiser, src/shared/sanitise.ts: an ANSI or OSC sequence a program prints
 * reaches no terminal, the CLI's or the workbench's), long lines cut, and the total capped (once,
 * with a notice) so a chatty or looping program cannot flood the browser. Grader lines are
 * sanitised too: they quote what programs chose (keys, transactional ids).
 */
export class OutputSink {
  private bytes = 0;
  private truncated = false;
  private readonly redactions: Array<[string, string]>;

  constructor(
    private readonly emit: (instance: string, stream: 'stdout' | 'stderr' | 'system', line: string) => void,
    workDir: string,
    private readonly limits: OutputLimits = DEFAULT_OUTPUT_LIMITS,
  ) {
    // Longest first, so the work dir inside the root is replaced before the root itself.
    this.redactions = [
      [`file://${workDir}/`, ''],
      [`${workDir}/`, ''],
      [`file://${ROOT_DIR}/`, ''],
      [`${ROOT_DIR}/`, ''],
      [workDir, '.'],
      [ROOT_DIR, '.'],
    ];
  }

  line(instance: string, stream: 'stdout' | 'stderr', raw: string): void {
    if (this.truncated) return;
    let text = raw;
    for (const [from, to] of this.redactions) text = text.split(from).join(to);
    text = showControlCharacters(text.replace(/\.kafkaiq\/runtime\/kafkajs-runtime-[0-9a-f]+\.mjs/g, 'kafkajs'));
    if (text.length > this.limits.maxLineChars) text = `${text.slice(0, this.limits.maxLineChars)} … [line cut at ${this.limits.maxLineChars} characters]`;
    this.bytes += text.length + 1;
    if (this.bytes > this.limits.maxBytes) {
      this.truncated = true;
      this.emit(instance, 'system', `[output truncated: more than ${Math.round(this.limits.maxBytes / 1024)} KB; the program keeps running]`);
      return;
    }
    this.emit(showControlCharacters(instance), stream, text);
  }

  system(line: string): void {
    this.emit('grader', 'system', showControlCharacters(line));
  }
}
