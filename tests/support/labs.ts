import { listLabIds } from '../../lab-server/labs/load-lab.ts';
import type { LabDefinition, PipelineLab } from '../../src/shared/lab.ts';

/** A loaded lab definition the test knows to be a pipeline lab (narrowed, or the test fails). */
export function asPipeline(lab: LabDefinition): PipelineLab {
  if (lab.kind !== 'pipeline') throw new Error(`expected a pipeline lab, got kind "${lab.kind}"`);
  return lab;
}

/** The name of a lab a test scaffolds into labs/ for the length of one test (`kafkaiq new` writes only there). */
export const probeLabId = (what: string) => `zz-${what}-${process.pid}`;

/**
 * The labs of the repository: listLabIds without the probes other test files scaffold meanwhile.
 * Files run in parallel, and a probe listed here could be gone by the time it is loaded.
 */
export function repositoryLabIds(): string[] {
  return listLabIds().filter((id) => !/^zz-[a-z0-9-]+-\d+$/.test(id));
}
