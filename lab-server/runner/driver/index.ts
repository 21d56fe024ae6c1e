/** Picks the program driver for a compiled program: see contract.ts. `wireWatched`: its instances run in the sandbox, behind the relay. */
import type { ProgramSource } from '../program/program-instance.ts';
import type { ProgramDriver } from './contract.ts';
import { InstrumentedDriver } from './instrumented.ts';
import { OpaqueDriver } from './opaque.ts';

export type { AimedHit, DriverContext, ProgramDriver } from './contract.ts';

export function driverFor(source: ProgramSource, wireWatched: boolean): ProgramDriver {
  return source.kind === 'bundle' || wireWatched ? new InstrumentedDriver(source) : new OpaqueDriver(source);
}
