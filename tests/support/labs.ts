import type { LabDefinition, PipelineLab } from '../../src/shared/lab.ts';

/** A loaded lab definition the test knows to be a pipeline lab (narrowed, or the test fails). */
export function asPipeline(lab: LabDefinition): PipelineLab {
  if (lab.kind !== 'pipeline') throw new Error(`expected a pipeline lab, got kind "${lab.kind}"`);
  return lab;
}
