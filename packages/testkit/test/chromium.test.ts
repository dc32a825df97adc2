import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChromiumSession, findChromium, launchChromium, runInChromium } from '../src/index.js';

const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

const leftovers = async (): Promise<string[]> =>
  (await readdir(tmpdir())).filter((n) => n.startsWith('testkit-chromium-')).sort();

describe('findChromium', () => {
  it('finds the Debian Chromium (npm test installs it; these tests never skip)', () => {
    expect(findChromium()).toMatch(/^\/usr\/(bin|lib\/chromium)\/chromium$/);
  });

  it('says how to install Chromium when it is missing', () => {
    expect(() => findChromium(['/nonexistent/chromium'])).toThrow(
      /Chromium is missing: none of \/nonexistent\/chromium exists\. `npm test` installs it .*scripts\/ensure-system\.sh chromium/,
    );
  });
});

describe('runInChromium', () => {
  it('returns the value computed in the browser, with WebCrypto, WebTransport and WebCodecs', async () => {
    const text = 'teleop \u{1F916} frame';
    const repeat = 1000;
    const bytes = Buffer.from(text.repeat(repeat), 'utf8');
    const expectedHex = createHash('sha256').update(bytes).digest('hex');
    const expectedXor = bytes.reduce((acc, b) => acc ^ b, 0);

    const before = await leftovers();
    const result = await runInChromium({
      entry: fixture('digest.ts'),
      exportName: 'digest',
      args: [text, repeat],
    });

    expect(result).toEqual({
      hex: expectedHex,
      xor: expectedXor,
      webTransport: 'function',
      videoDecoder: 'function',
      secure: true,
    });
    // The browser's temporary directory is gone once runInChromium settles.
    expect(await leftovers()).toEqual(before);
  });

  it('rejects with the message the module threw, and cleans up', async () => {
    const before = await leftovers();
    await expect(
      runInChromium({ entry: fixture('throws.ts'), exportName: 'explode', args: ['E42'] }),
    ).rejects.toThrow(/explode\(\) from .*throws\.ts failed in Chromium: .*fixture exploded with code E42/s);
    expect(await leftovers()).toEqual(before);
  });

  it('refuses to bundle a module that imports a Node built-in', async () => {
    const run = runInChromium({ entry: fixture('uses-node.ts'), exportName: 'readSomething' });
    await expect(run).rejects.toThrow(
      /esbuild could not bundle .*uses-node\.ts for the browser:.*"node:fs"/s,
    );
  });
});

describe('ChromiumSession', () => {
  let session: ChromiumSession;
  beforeAll(async () => {
    session = await ChromiumSession.open();
  });
  afterAll(async () => {
    await session?.close();
  });

  it('runs several modules in one browser', async () => {
    const a = await session.run<{ hex: string }>({
      entry: fixture('digest.ts'),
      exportName: 'digest',
      args: ['a', 1],
    });
    const b = await session.run<{ hex: string }>({
      entry: fixture('digest.ts'),
      exportName: 'digest',
      args: ['b', 2],
    });
    expect(a.hex).toBe(createHash('sha256').update('a').digest('hex'));
    expect(b.hex).toBe(createHash('sha256').update('bb').digest('hex'));
  });

  it('fails a run whose page reports an uncaught error, even though the function returned', async () => {
    await expect(session.run({ entry: fixture('throws.ts'), exportName: 'uncaughtLater' })).rejects.toThrow(
      /returned, but the page reported errors:.*page error: .*uncaught fixture error/s,
    );
  });

  it('fails a run that leaves an unhandled promise rejection', async () => {
    await expect(
      session.run({ entry: fixture('throws.ts'), exportName: 'unhandledRejection' }),
    ).rejects.toThrow(/page error: .*unhandled fixture rejection/s);
  });

  it('fails a run that logs console.error, unless allowConsoleErrors is set', async () => {
    const opts = { entry: fixture('throws.ts'), exportName: 'logsError' };
    await expect(session.run(opts)).rejects.toThrow(/console\.error: fixture console error/);
    await expect(session.run({ ...opts, allowConsoleErrors: true })).resolves.toBe('returned');
  });

  it('fails a run that does not finish in time', async () => {
    await expect(
      session.run({ entry: fixture('throws.ts'), exportName: 'hang', timeoutMs: 1500 }),
    ).rejects.toThrow(/hang\(\) from .*throws\.ts did not finish within 1500 ms/);
  });

  it('names the missing export instead of calling undefined', async () => {
    await expect(session.run({ entry: fixture('throws.ts'), exportName: 'nope' })).rejects.toThrow(
      /has no export named "nope" \(it exports: explode, hang, logsError, uncaughtLater, unhandledRejection\)/,
    );
  });

  it('keeps working after a failed run', async () => {
    const r = await session.run<{ secure: boolean }>({
      entry: fixture('digest.ts'),
      exportName: 'digest',
      args: ['x', 1],
    });
    expect(r.secure).toBe(true);
  });
});

describe('launchChromium', () => {
  it('removes its temporary directory on close, and close is idempotent', async () => {
    const before = await leftovers();
    const launched = await launchChromium();
    expect((await leftovers()).length).toBe(before.length + 1);
    expect(launched.browser.isConnected()).toBe(true);
    await launched.close();
    await launched.close();
    expect(launched.browser.isConnected()).toBe(false);
    expect(await leftovers()).toEqual(before);
  });
});
