/**
 * Loading labs (lab-server/labs/load-lab.ts): every lab in labs/ with its fixtures, and an unknown
 * id refused with the list of known ones.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadLab } from '../../lab-server/labs/load-lab.ts';
import { repositoryLabIds } from '../support/labs.ts';

describe('lab definitions', () => {
  it('rejects an unknown lab with the list of known ones', async () => {
    await expect(loadLab('no-such-lab')).rejects.toThrow(/No lab "no-such-lab": known labs are .*single-stage/);
    await expect(loadLab('../etc')).rejects.toMatchObject({ code: 'LAB_NOT_FOUND' });
  });

  it('loads every lab in labs/ with its fixtures', async () => {
    const ids = repositoryLabIds();
    expect(ids).toEqual(expect.arrayContaining(['copy', 'single-stage']));
    for (const id of ids) {
      const lab = await loadLab(id);
      expect(lab.definition.checks.length, id).toBeGreaterThan(0);
      expect(fs.existsSync(lab.solutionFile)).toBe(true);
      for (const broken of lab.broken) expect(lab.definition.checks, `${id}/${broken.name} expects a check the lab runs`).toContain(broken.expectFail);
    }
  });
});
