import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ApiError } from './errors.js';

/**
 * Parses a request part with a zod schema; on failure answers 400 `invalid-request` naming each
 * bad field and what was expected.
 */
export function parse<T extends z.ZodType>(
  schema: T,
  value: unknown,
  where: 'body' | 'query' | 'path',
): z.infer<T> {
  const result = schema.safeParse(value ?? {});
  if (result.success) return result.data;
  const problems = result.error.issues.map(
    (i) => `${i.path.length > 0 ? i.path.join('.') : where}: ${i.message}`,
  );
  throw new ApiError('invalid-request', `invalid ${where}: ${problems.join('; ')}`);
}

/** JSON Schema of a zod schema, for the OpenAPI document (validation itself is {@link parse}). */
export function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, {
    target: 'draft-7',
    io: 'input',
    unrepresentable: 'any',
  });
  return rest;
}

/** A UUID path parameter. */
export const uuidParam = z.uuid({ error: 'expected a UUID' });

/** The request's path parameters as a record. */
export function params(request: FastifyRequest): Record<string, string> {
  return request.params as Record<string, string>;
}
