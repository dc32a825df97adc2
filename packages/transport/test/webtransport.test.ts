import { fileURLToPath } from 'node:url';
import { ChromiumSession } from '@svc/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSelfSignedCertificate } from '../src/cert/index.js';
import type { Session, SessionCloseInfo } from '../src/session.js';
import { WebTransportServer } from '../src/webtransport/server.js';
import { SwitchableCertificates } from './support/quic-server.js';

const page = fileURLToPath(new URL('./fixtures/webtransport-page.ts', import.meta.url));

describe('WebTransport server with Chromium', () => {
  let chromium: ChromiumSession;
  let server: WebTransportServer;
  let hashHex: string;
  const sessions: Session[] = [];
  const closes: SessionCloseInfo[] = [];
  const controlLines: string[] = [];
  const errors: unknown[] = [];

  beforeAll(async () => {
    const cert = await createSelfSignedCertificate({ commonName: 'wt-test' });
    hashHex = Buffer.from(cert.sha256).toString('hex');
    server = await WebTransportServer.listen({
      host: '127.0.0.1',
      port: 0,
      path: '/wt',
      certificates: new SwitchableCertificates(cert),
      onError: (err) => errors.push(err),
      onSession: (session) => {
        sessions.push(session);
        let text = '';
        session.setHandlers({
          onControlData: (bytes) => {
            text += new TextDecoder().decode(bytes);
            for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n')) {
              const line = text.slice(0, nl);
              text = text.slice(nl + 1);
              controlLines.push(line);
              if (line.startsWith('hello'))
                session.writeControl(new TextEncoder().encode(`welcome ${session.id}\n`));
              if (line === 'close please') session.close(7, 'asked to');
            }
          },
          // Echo every datagram back.
          onDatagram: (payload) => session.sendDatagram(payload),
          onClose: (info) => closes.push(info),
        });
      },
    });
    chromium = await ChromiumSession.open();
  });

  afterAll(async () => {
    await chromium?.close();
    await server?.close();
  });

  it('accepts a session: control stream both ways, datagrams both ways, close with code and reason', async () => {
    const url = `https://127.0.0.1:${server.port}/wt`;
    const result = await chromium.run<{ reply: string; received: number[]; closeInfo: unknown }>({
      entry: page,
      exportName: 'exchange',
      args: [url, hashHex, 20],
    });
    expect(result.reply).toMatch(/^welcome \S+\n$/);
    expect(controlLines).toEqual(['hello from the pilot', 'close please']);
    expect(result.received.length).toBeGreaterThanOrEqual(10); // datagrams are unreliable, even on loopback
    expect(result.received.every((n) => n === 1000)).toBe(true);
    expect(result.closeInfo).toEqual({ closeCode: 7, reason: 'asked to' });
    expect(closes).toEqual([{ code: 7, reason: 'asked to', by: 'local' }]);
    expect(sessions[0]!.remoteAddress).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(errors).toEqual([]);
  });

  it('refuses other paths cleanly, and keeps serving', async () => {
    const wrong = await chromium.run<string>({
      entry: page,
      exportName: 'tryOpen',
      args: [`https://127.0.0.1:${server.port}/nope`, hashHex],
      allowConsoleErrors: true, // Chromium logs the refused session
    });
    expect(wrong).toMatch(/^failed/);
    const right = await chromium.run<string>({
      entry: page,
      exportName: 'tryOpen',
      args: [`https://127.0.0.1:${server.port}/wt`, hashHex],
    });
    expect(right).toBe('ready');
  });
});
