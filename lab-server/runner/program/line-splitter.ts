export interface LineLimits {
  /** Longest line kept, in bytes; the rest of a longer line is dropped. */
  maxLineBytes: number;
  /** Bytes read from the stream before everything further is drained unread. */
  maxTotalBytes: number;
}

export const DEFAULT_LINE_LIMITS: LineLimits = { maxLineBytes: 16 * 1024, maxTotalBytes: 64 * 1024 * 1024 };

/**
 * Splits a byte stream from a learner program into lines without ever holding more than one
 * bounded line: a longer line is cut (and the rest of it dropped, with a mark), and past a total
 * the stream is only drained, so one line without a newline cannot grow the server's memory.
 */
export class BoundedLineSplitter {
  private readonly buffer: Buffer;
  private used = 0;
  /** Inside a line that was already cut: drop until its newline. */
  private cutting = false;
  private total = 0;
  private drained = false;

  constructor(
    private readonly onLine: (line: string, cut: boolean) => void,
    private readonly limits: LineLimits = DEFAULT_LINE_LIMITS,
    /** Told once when the total is reached. */
    private readonly onOverflow: () => void = () => {},
  ) {
    this.buffer = Buffer.allocUnsafe(limits.maxLineBytes);
  }

  push(chunk: Buffer): void {
    if (this.drained) return;
    if (this.total + chunk.length > this.limits.maxTotalBytes) {
      chunk = chunk.subarray(0, Math.max(0, this.limits.maxTotalBytes - this.total));
      this.drained = true;
    }
    this.total += chunk.length;
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(10, start);
      const end = nl === -1 ? chunk.length : nl;
      if (!this.cutting) {
        const room = this.limits.maxLineBytes - this.used;
        const take = Math.min(room, end - start);
        chunk.copy(this.buffer, this.used, start, start + take);
        this.used += take;
        if (end - start > room) {
          this.emit(true);
          this.cutting = true;
        }
      }
      if (nl === -1) break;
      if (this.cutting) this.cutting = false;
      else this.emit(false);
      start = nl + 1;
    }
    if (this.drained) {
      this.end();
      this.onOverflow();
    }
  }

  /** The stream ended: a last line without a newline still counts. */
  end(): void {
    if (this.used > 0 && !this.cutting) this.emit(false);
    this.used = 0;
    this.cutting = false;
  }

  private emit(cut: boolean): void {
    let text = this.buffer.toString('utf8', 0, this.used);
    if (text.endsWith('\r')) text = text.slice(0, -1);
    this.used = 0;
    this.onLine(text, cut);
  }
}
