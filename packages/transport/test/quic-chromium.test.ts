import { type LaunchedChromium, launchChromium } from '@svc/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSelfSignedCertificate } from '../src/cert/index.js';
import { type QuicCloseInfo, type QuicConnection, QuicEndpoint } from '../src/quic/index.js';
import { SwitchableCertificates } from './support/quic-server.js';
import { servePage } from './support/serve-page.js';

/** The page: opens a WebTransport session pinned to the hash and records how it ends. */
function pageHtml(url: string, hashBase64: string): string {
  return `<!doctype html><meta charset="utf-8"><title>wt</title><script>
const hash = Uint8Array.from(atob(${JSON.stringify(hashBase64)}), (c) => c.charCodeAt(0));
window.wtOutcome = (async () => {
  try {
    const wt = new WebTransport(${JSON.stringify(url)}, {
      serverCertificateHashes: [{ algorithm: 'sha-256', value: hash }],
    });
    await wt.ready;
    return 'ready';
  } catch (err) {
    return 'failed: ' + String(err);
  }
})();
</script>`;
}

describe('QuicEndpoint with Chromium', () => {
  let chromium: LaunchedChromium;

  beforeAll(async () => {
    chromium = await launchChromium();
  });

  afterAll(async () => {
    await chromium?.close();
  });

  it('completes a QUIC handshake with ALPN h3 when Chromium opens WebTransport with a pinned hash', async () => {
    const cert = await createSelfSignedCertificate({ commonName: 'chromium-test' });
    const endpoint = await QuicEndpoint.listen({
      host: '127.0.0.1',
      port: 0,
      certificates: new SwitchableCertificates(cert),
    });
    const errors: unknown[] = [];
    endpoint.on('error', (err) => errors.push(err));
    const accepted = new Promise<QuicConnection>((resolve) => {
      endpoint.on('connection', resolve);
    });
    const url = `https://127.0.0.1:${endpoint.port}/wt`;
    const { server, origin } = await servePage(pageHtml(url, Buffer.from(cert.sha256).toString('base64')));
    const context = await chromium.browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${origin}/`);
      const conn = await accepted;

      expect(conn.established).toBe(true);
      expect(conn.alpn).toBe('h3');
      expect(conn.remoteAddress.host).toBe('127.0.0.1');
      // Chromium's ClientHello spans two Initial datagrams: both must reach this one connection.
      expect(endpoint.connectionCount).toBe(1);
      expect(endpoint.counters()).toMatchObject({ malformed: 0, unroutable: 0, refused: 0 });
      // Chromium's datagrams reach us at up to 1199 bytes; ours must fit what it accepts.
      expect(conn.maxDatagramSize()).toBeGreaterThan(1000);

      // No HTTP/3 layer answers here: close with H3_NO_ERROR and check the browser notices.
      const closed = new Promise<QuicCloseInfo>((resolve) => conn.on('closed', resolve));
      conn.close(0x100, 'no http/3 in this test');
      expect(await page.evaluate('window.wtOutcome')).toMatch(/^failed: /);
      expect((await closed).initiator).toBe('local');
      expect(errors).toEqual([]);
    } finally {
      await context.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await endpoint.close();
    }
  });

  it('gets no established connection when Chromium pins another hash', async () => {
    const [cert, other] = await Promise.all([
      createSelfSignedCertificate({ commonName: 'chromium-test' }),
      createSelfSignedCertificate({ commonName: 'someone-else' }),
    ]);
    const endpoint = await QuicEndpoint.listen({
      host: '127.0.0.1',
      port: 0,
      certificates: new SwitchableCertificates(cert),
    });
    let established = 0;
    endpoint.on('connection', () => established++);
    const url = `https://127.0.0.1:${endpoint.port}/wt`;
    const { server, origin } = await servePage(pageHtml(url, Buffer.from(other.sha256).toString('base64')));
    const context = await chromium.browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${origin}/`);
      // Chromium refuses our certificate during the handshake, so it never sends its Finished.
      expect(await page.evaluate('window.wtOutcome')).toMatch(/^failed: /);
      expect(established).toBe(0);
    } finally {
      await context.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await endpoint.close();
    }
  });
});
