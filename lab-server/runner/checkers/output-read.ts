/** The shape of a pipeline's output as the grader read it (collect/pipeline-output.ts reads it). */
import type { ReadRecord } from '../../kafka/inspect.ts';

/** What the broker holds after the program stopped: the output both ways, and the group's offsets. */
export interface OutputRead {
  /** The output topics as a read_committed consumer reads them. */
  committed: ReadRecord[];
  /** ... and as a read_uncommitted one does. */
  uncommitted: ReadRecord[];
  /** Output partitions whose LSO is below the high watermark (an open transaction). */
  hanging: string[];
  /** Output topics the read_committed reader could not read to their end. */
  blocked: string[];
  /** Per input partition: the group's committed offset (-1: none) and the end of the log. */
  inputOffsets: { topic: string; partition: number; committed: number; hwm: number }[];
}

/** Where one output partition's log starts now (output-log-intact). */
export interface PartitionStart {
  /** The topic's logical name (as the learner sees it). */
  topic: string;
  partition: number;
  logStart: number;
}
