// Inputs and outputs of the AI routes.
import { z } from 'zod';
import { exact } from '../../server/platform/validation.js';
import { AI_GENERATION_STATUSES, AI_PROVIDERS } from '../../db/schema.js';
import { listInput, listOutput } from '../../server/platform/pagination.js';

const isoDate = z.iso.datetime({ offset: true });

const generationFields = {
  prompt: z.string().trim().min(1, { error: 'A prompt is required.' }).max(20_000),
  templateId: z.uuid().optional(),
  variables: z
    .record(
      z
        .string()
        .max(40)
        .regex(/^[A-Za-z_][A-Za-z0-9_]{0,39}$/),
      z.string().max(10_000),
    )
    .refine((v) => Object.keys(v).length <= 50, { error: 'At most 50 variables.' })
    .optional()
    .meta({ description: "Values of the template's {{variables}} (at most 50).", maxProperties: 50 }),
  systemPrompt: z.string().max(10_000).optional(),
  model: z
    .string()
    .trim()
    .regex(/^[A-Za-z0-9][\w.:/-]{0,99}$/, { error: 'A model name: letters, digits and . : / - _ (at most 100).' })
    .max(100)
    .optional(),
  temperature: exact(z.number().min(0).max(2)).optional(),
  maxTokens: exact(z.number().int().min(1).max(4096))
    .optional()
    .meta({ description: 'Longest answer, in tokens (default 1024).' }),
};

export const generateInput = z.object({
  workspaceId: z.uuid().optional().meta({ description: "Body or query; defaults to the caller's active workspace." }),
  ...generationFields,
});
export const workspaceGenerateInput = z.object({ workspaceId: z.uuid(), ...generationFields });
export type GenerateInput = z.infer<typeof generateInput>;

export const generationOutput = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    userId: z.uuid().nullable(),
    templateId: z.uuid().nullable(),
    provider: z.enum(AI_PROVIDERS),
    model: z.string(),
    prompt: z.string(),
    systemPrompt: z.string().nullable(),
    temperature: z.number().nullable(),
    output: z.string(),
    status: z.enum(AI_GENERATION_STATUSES),
    promptTokens: z.number().int(),
    completionTokens: z.number().int(),
    totalTokens: z.number().int(),
    durationMs: z.number().int(),
    isSample: z.boolean(),
    createdAt: isoDate,
  })
  .meta({ id: 'Generation' });

export const usageOutput = z
  .object({
    workspaceId: z.uuid(),
    period: z.object({ start: isoDate, resetsAt: isoDate }),
    used: z.number().int(),
    limit: z.number().int(),
    limitSource: z
      .enum(['PLAN', 'SYSTEM', 'TEST_ACCOUNT'])
      .meta({ description: 'Which limit is the smallest, and so applies.' }),
    remaining: z.number().int(),
    tokens: z.number().int(),
    byModel: z.array(
      z.object({
        provider: z.enum(AI_PROVIDERS),
        model: z.string(),
        generations: z.number().int(),
        tokens: z.number().int(),
      }),
    ),
  })
  .meta({ id: 'AiUsage' });

export const generateOutput = generationOutput
  .extend({
    usage: z.object({ used: z.number().int(), limit: z.number().int(), remaining: z.number().int() }),
  })
  .meta({ id: 'GenerationResult' });

export const historyInput = listInput.extend({ workspaceId: z.uuid().optional() });
export const workspaceHistoryInput = listInput.extend({ workspaceId: z.uuid() });
export const historyOutput = listOutput(generationOutput);

export const templateOutput = z
  .object({
    id: z.uuid(),
    slug: z.string(),
    name: z.string(),
    description: z.string(),
    category: z.string(),
    body: z.string(),
    variables: z.array(z.string()),
  })
  .meta({ id: 'Template' });

export const providerStatusOutput = z
  .object({
    provider: z.enum(AI_PROVIDERS),
    model: z.string(),
    configured: z.boolean(),
    demoRestricted: z.boolean().meta({ description: 'The caller is a demo account whose generation is refused.' }),
    blockRealGeneration: z.boolean(),
    showSampleHistory: z.boolean(),
    testAccount: z.boolean(),
  })
  .meta({ id: 'AiProviderStatus' });

export const adminUsageOutput = z
  .object({
    period: z.object({ start: isoDate, resetsAt: isoDate }),
    totals: z.object({
      generationsThisMonth: z.number().int(),
      tokensThisMonth: z.number().int(),
      generationsAllTime: z.number().int(),
      failedThisMonth: z.number().int(),
    }),
    byProvider: z.array(
      z.object({
        provider: z.enum(AI_PROVIDERS),
        model: z.string(),
        generations: z.number().int(),
        tokens: z.number().int(),
      }),
    ),
    byWorkspace: z.array(
      z.object({ workspaceId: z.uuid(), name: z.string(), generations: z.number().int(), tokens: z.number().int() }),
    ),
    recent: z.array(
      z.object({
        id: z.uuid(),
        workspaceId: z.uuid(),
        userId: z.uuid().nullable(),
        provider: z.enum(AI_PROVIDERS),
        model: z.string(),
        status: z.enum(AI_GENERATION_STATUSES),
        totalTokens: z.number().int(),
        durationMs: z.number().int(),
        createdAt: isoDate,
      }),
    ),
  })
  .meta({ id: 'AdminAiUsage' });

/** A route of one workspace, named in the path. */
export const workspaceInput = z.object({ workspaceId: z.uuid() });
export const usageInput = z.object({ workspaceId: z.uuid().optional() });
export const templateIdInput = z.object({ templateId: z.uuid() });
