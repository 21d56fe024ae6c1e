/**
 * The one place that picks a scenario for a lab: pipelines (seeded input, crash-point faults,
 * output verification; throughput labs time a burst first) or monitors (a live workload,
 * look-alikes and hanging transactions, alert verification). Both run in the same lifecycle
 * (lifecycle.ts). Callers (the workbench session, `kafkaiq grade` and `kafkaiq check`) only see
 * the Attempt interface.
 */
import type { LabDefinition } from '../../src/shared/lab.ts';
import { KafkaIqError } from '../../src/shared/errors.ts';
import { AttemptLifecycle } from './lifecycle.ts';
import type { Scenario } from './scenario.ts';
import { MonitorScenario } from './monitor/scenario.ts';
import { PipelineScenario } from './pipeline/scenario.ts';
import type { Attempt, AttemptOptions } from './types.ts';

export type { Attempt, AttemptMode, AttemptOptions, ProgramInput } from './types.ts';

/** The scenario of a lab's kind: the switch narrows the definition, and a kind without a case does not compile. */
function scenarioFor(definition: LabDefinition): (attempt: AttemptLifecycle) => Scenario {
  switch (definition.kind) {
    case 'pipeline':
      return (attempt) => new PipelineScenario(attempt, definition);
    case 'monitor':
      return (attempt) => new MonitorScenario(attempt, definition);
    default:
      return unknownKind(definition);
  }
}

function unknownKind(definition: never): never {
  throw new KafkaIqError('LAB_INVALID', `No scenario for lab kind "${(definition as LabDefinition).kind}"`);
}

export function createAttempt(options: AttemptOptions): Attempt {
  return new AttemptLifecycle(options, scenarioFor(options.lab.definition));
}
