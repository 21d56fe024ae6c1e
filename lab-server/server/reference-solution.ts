/**
 * A lab's reference solution, read from its folder when a learner asks for it after a graded
 * attempt (lab-connection.ts checks the attempt and records the reveal). The site never ships it:
 * the workbench payload carries the starter only.
 */
import fs from 'node:fs/promises';
import { KafkaIqError } from '../../src/shared/errors.ts';
import { CLIENT_INFO, type KafkaClient } from '../../src/shared/clients.ts';
import { loadLab } from '../labs/load-lab.ts';

export async function readReferenceSolution(labId: string, client: KafkaClient): Promise<string> {
  const lab = await loadLab(labId);
  const file = client === 'kafkajs' ? lab.solutionFile : lab.clients[client]?.solutionFile;
  if (!file) throw new KafkaIqError('INVALID_INPUT', `This lab has no reference solution written with ${CLIENT_INFO[client].label}: switch to kafkajs to see its solution.`);
  return fs.readFile(file, 'utf8');
}
