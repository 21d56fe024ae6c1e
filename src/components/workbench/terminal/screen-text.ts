/**
 * What the terminal view writes to xterm, as pure functions (tested without a browser): a program's
 * output line, sanitised and then coloured, and the last gate every written line passes, which lets
 * only the workbench's own colours through (src/shared/sanitise.ts).
 */
import { keepOnlyColours, showControlCharacters } from '../../../shared/sanitise.ts';
import { ansi, instanceTag } from './ansi.ts';

/** One line of program output as the terminal shows it: tag, then the text, escaped, in the stream's colour. */
export function outputLine(instance: string, stream: 'stdout' | 'stderr' | 'system', line: string): string {
  // Program text is sanitised first (the server did too; this holds whatever a server sends), then coloured.
  const safe = showControlCharacters(line);
  const text = stream === 'stderr' ? ansi.red(safe) : stream === 'system' ? ansi.dim(safe) : safe;
  return `${instanceTag(showControlCharacters(instance))} ${text}`;
}

/**
 * The gate before xterm: the workbench's own colours pass, any other control character is shown
 * escaped, so no escape sequence can move the cursor, retitle, set the clipboard or make xterm
 * answer a query into the command line. Newlines stay (printAbove splits on them).
 */
export function screenText(line: string): string {
  return keepOnlyColours(line, { keepNewlines: true });
}
