/**
 * The API's contract: the OpenAPI document describes every answer of every operation (errors
 * included, with the one registry of codes), and the tests' response check catches a route that
 * drifts from what it declares.
 */
import { readFile } from 'node:fs/promises';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { API_ERROR_CODES, API_ERRORS, ApiError, errorResponses } from '../src/api/errors.js';
import { startApi, type TestApi } from './support/api.js';
import { ContractError } from './support/contract.js';
import { databaseBackends } from './support/databases.js';
import { startTestProvider, type TestProvider } from './support/oidc.js';

interface Operation {
  readonly responses: Record<string, { content?: Record<string, { schema: Record<string, unknown> }> }>;
}

describe('the OpenAPI document', () => {
  let provider: TestProvider;
  let api: TestApi;
  let paths: Record<string, Record<string, Operation>>;
  let components: Record<string, Record<string, unknown>>;

  beforeAll(async () => {
    provider = await startTestProvider();
    api = await startApi({ backend: databaseBackends[0]!, provider });
    const document = await api.call('GET', '/api/v1/openapi.json');
    expect(document.status).toBe(200);
    paths = document.body.paths;
    components = document.body.components;
  });
  afterAll(async () => {
    await api?.dispose();
    await provider?.close();
  });

  const operations = () =>
    Object.entries(paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, operation]) => ({
        name: `${method.toUpperCase()} ${path}`,
        operation,
      })),
    );

  it('describes a success and the errors of every operation, each error with the codes of its status', () => {
    const problems: string[] = [];
    for (const { name, operation } of operations()) {
      const statuses = Object.keys(operation.responses);
      if (!statuses.some((s) => s.startsWith('2'))) problems.push(`${name}: no success answer`);
      // Every route may be rate-limited or fail.
      for (const always of ['429', '500']) {
        if (!statuses.includes(always)) problems.push(`${name}: no ${always}`);
      }
      for (const status of statuses.filter((s) => Number(s) >= 400)) {
        const schema = operation.responses[status]?.content?.['application/json']?.schema;
        const codes = (schema as { properties?: { error?: { properties?: { code?: { enum?: string[] } } } } })
          ?.properties?.error?.properties?.code?.enum;
        if (codes === undefined || codes.length === 0) {
          problems.push(`${name} ${status}: no error codes`);
          continue;
        }
        for (const code of codes) {
          const registered = API_ERRORS[code as keyof typeof API_ERRORS];
          const body = code === 'invalid-request' && (status === '413' || status === '415');
          if (registered === undefined) problems.push(`${name} ${status}: unknown code ${code}`);
          else if (registered.status !== Number(status) && !body)
            problems.push(`${name} ${status}: ${code} is answered with ${registered.status}`);
        }
      }
    }
    expect(problems).toEqual([]);
    expect(operations().length).toBeGreaterThan(20);
  });

  it('lists every code of the registry, with its status and meaning', () => {
    const listed = (components.schemas!.ErrorCode as { oneOf: { enum: [string]; description: string }[] })
      .oneOf;
    expect(listed.map((c) => c.enum)).toEqual(API_ERROR_CODES.map((code) => [code]));
    for (const {
      enum: [code],
      description,
    } of listed) {
      const { status, meaning } = API_ERRORS[code as keyof typeof API_ERRORS];
      expect(description).toBe(`${status}: ${meaning}`);
    }
    expect(API_ERROR_CODES).toContain('internal');
  });
});

describe('docs/cloud.md', () => {
  it('lists exactly the registry of error codes, with their statuses and meanings', async () => {
    const text = await readFile(new URL('../../../docs/cloud.md', import.meta.url), 'utf8');
    const rows = [...text.matchAll(/^\| `([a-z-]+)` +\| (\d{3}) +\| (.+?) +\|$/gm)].map(
      ([, code, status, meaning]) => ({
        code,
        status: Number(status),
        meaning,
      }),
    );
    expect(rows).toEqual(API_ERROR_CODES.map((code) => ({ code, ...API_ERRORS[code] })));
  });
});

describe('the response check of the tests', () => {
  let provider: TestProvider;
  let api: TestApi;

  beforeAll(async () => {
    provider = await startTestProvider();
    api = await startApi({ backend: databaseBackends[0]!, provider });
    // Routes that break their own declarations, the ways a route can drift from its document.
    const app = api.app.withTypeProvider<ZodTypeProvider>();
    const counted = z.object({ n: z.number() });
    app.get(
      '/api/v1/drift/body',
      { schema: { response: { 200: counted, ...errorResponses([]) } } },
      // The handler's type says it cannot, so the drift is forced past the compiler.
      async () => ({ n: 'seven' }) as unknown as { n: number },
    );
    app.get(
      '/api/v1/drift/serialized',
      { schema: { response: { 200: counted, ...errorResponses([]) } } },
      async (_request, reply) =>
        reply.serializer(JSON.stringify).send({ n: 'seven' } as unknown as { n: number }),
    );
    app.get(
      '/api/v1/drift/status',
      { schema: { response: { 200: counted, ...errorResponses(['not-found']) } } },
      async () => {
        throw new ApiError('conflict', 'not declared by this route');
      },
    );
    app.get(
      '/api/v1/drift/code',
      { schema: { response: { 200: counted, ...errorResponses(['forbidden']) } } },
      async () => {
        // Same status as `forbidden`, another code.
        throw new ApiError('not-registered', 'not declared by this route');
      },
    );
    app.get('/api/v1/drift/undescribed', async () => ({ n: 7 }));
    app.get(
      '/api/v1/drift/none',
      { schema: { response: { 200: counted, ...errorResponses([]) } } },
      async () => ({
        n: 7,
      }),
    );
  });
  afterAll(async () => {
    await api?.dispose();
    await provider?.close();
  });

  it('lets answers through that fit their schemas, errors and unknown paths included', async () => {
    expect((await api.call('GET', '/api/v1/drift/none')).status).toBe(200);
    expect((await api.call('GET', '/api/v1/console-config')).status).toBe(200);
    expect((await api.call('GET', '/api/v1/orgs')).status).toBe(401);
    expect((await api.call('GET', '/api/v1/no-such-thing')).status).toBe(404);
    expect(api.violations).toEqual([]);
  });

  it.each([
    ['a body the serializer refuses', '/api/v1/drift/body', 200, /does not fit its schema: n:/],
    ['a body sent past the serializer', '/api/v1/drift/serialized', 200, /body does not fit its schema: n:/],
    ['a status the route does not declare', '/api/v1/drift/status', 409, /status 409 is not declared/],
    ['an error code its status does not declare', '/api/v1/drift/code', 403, /body does not fit its schema/],
    ['a route without response schemas', '/api/v1/drift/undescribed', 200, /declares no response schemas/],
  ] as const)('fails the request on %s', async (_what, url, status, problem) => {
    const before = api.violations.length;
    const error = await api.call('GET', url).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ContractError);
    expect(api.violations.slice(before)).toContainEqual(
      expect.objectContaining({ request: `GET ${url}`, status, problem: expect.stringMatching(problem) }),
    );
  });

  it('reports a drift of a request made around the helper at the next request', async () => {
    const before = api.violations.length;
    expect((await api.app.inject({ method: 'GET', url: '/api/v1/drift/status' })).statusCode).toBe(409);
    expect(api.violations).toHaveLength(before + 1);
    await expect(api.call('GET', '/api/v1/drift/none')).rejects.toThrow(/status 409 is not declared/);
  });
});
