/**
 * The console's API types are svc-cloud's current API: the committed `schema.d.ts` must be what
 * `npm run api:types -w @svc/console` would write now. The text is made in memory; the test never
 * writes a file.
 */
import { readFile } from 'node:fs/promises';
import { relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { API_TYPES_COMMAND, API_TYPES_PATH, generateApiTypes } from '../scripts/api-types.js';

describe('the console API types', () => {
  it('are those of the current OpenAPI document', async () => {
    const committed = await readFile(API_TYPES_PATH, 'utf8').catch(() => '');
    const current = await generateApiTypes();
    if (committed !== current) {
      const differs = [...current].findIndex((char, i) => committed[i] !== char);
      const line = current.slice(0, differs < 0 ? current.length : differs).split('\n').length;
      expect.fail(
        `${relative(process.cwd(), API_TYPES_PATH)} is not the API's: it differs from line ${line} on. ` +
          `Run \`${API_TYPES_COMMAND}\` and commit the file.`,
      );
    }
    // The fleet's stream is typed too: the console reads its events with these types.
    expect(current).toContain("'/api/v1/orgs/{org}/fleet/events'");
    expect(current).toContain("'text/event-stream'");
  });
});
