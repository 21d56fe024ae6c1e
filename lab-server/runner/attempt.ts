/**
 * The one place that picks a scenario for a lab: pipelines (seeded input, crash-point faults,
 * output verification; throughput labs time a burst first) or monitors (a live workload,
 * look-alikes and hanging transactions, alert verification). Both run in the same lifecycle
 * (lifecycle.ts). Callers (the workbench session, `kafkaiq grade` and `kafkaiq check`) only see
 * the Attempt interface.
 */
import type { LabDefinition } from '../../src/shared/lab.ts';
import { AttemptLifecycle, type Scenario } from './lifecycle.ts';
import { MonitorScenario } from './scenarios/monitor.ts';
import { PipelineScenario } from './scenarios/pipeline.ts';
import type { Attempt, AttemptOptions } from './types.ts';

export type { Attempt, AttemptMode, AttemptOptions, ProgramInput } from './types.ts';

/** One scenario per lab kind: a kind without one does not compile. */
const SCENARIOS: { [K in LabDefinition['kind']]: (attempt: AttemptLifecycle) => Scenario } = {
  pipeline: (attempt) => new PipelineScenario(attempt),
  monitor: (attempt) => new MonitorScenario(attempt),
};

export function createAttempt(options: AttemptOptions): Attempt {
  return new AttemptLifecycle(options, SCENARIOS[options.lab.definition.kind]);
}
