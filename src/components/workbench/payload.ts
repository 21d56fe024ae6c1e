/**
 * What Lab.astro hands the island, as JSON in the page: the LabInfo prepared at build time and
 * the hints already rendered from markdown to HTML (by Astro, from the lab's own hints.md).
 */
import { z } from 'zod';
import { labInfoSchema } from '../../shared/lab.ts';

export const workbenchPayloadSchema = z
  .object({
    info: labInfoSchema,
    hintsHtml: z.string().describe("hints.md rendered by Astro's markdown pipeline at build time"),
    clientHintsHtml: z
      .object({ platformatic: z.string().optional() })
      .strict()
      .default({})
      .describe('hints.<client>.md rendered the same way, for a client other than kafkajs'),
  })
  .strict();
export type WorkbenchPayload = z.infer<typeof workbenchPayloadSchema>;
