import { randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type CertificateMaterial, createSelfSignedCertificate } from '../src/cert/index.js';
import { isTransportError, TransportError } from '../src/errors.js';
import {
  CONGESTION_CONTROLLERS,
  type CongestionControl,
  type QuicCloseInfo,
  type QuicConnection,
  QuicEndpoint,
  type QuicEndpointOptions,
  resolveTransportOptions,
} from '../src/quic/index.js';
import { QuicTestClient, type QuicTestClientOptions } from './support/quic-client.js';
import { echo, SwitchableCertificates } from './support/quic-server.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

let certA: CertificateMaterial;
let certB: CertificateMaterial;
const cleanups: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  [certA, certB] = await Promise.all([
    createSelfSignedCertificate({ commonName: 'quic-test-a' }),
    createSelfSignedCertificate({ commonName: 'quic-test-b' }),
  ]);
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Started {
  endpoint: QuicEndpoint;
  certificates: SwitchableCertificates;
  /** Errors from the endpoint and from the echo handlers; must stay empty. */
  errors: unknown[];
  /** Server-side connections in handshake order. */
  accepted: QuicConnection[];
}

/** Starts an echoing endpoint on a free port; it is closed after the test. */
async function startEndpoint(options: Partial<QuicEndpointOptions> = {}): Promise<Started> {
  const certificates = new SwitchableCertificates(certA);
  const endpoint = await QuicEndpoint.listen({ host: '127.0.0.1', port: 0, certificates, ...options });
  cleanups.push(() => endpoint.close());
  const errors: unknown[] = [];
  const accepted: QuicConnection[] = [];
  endpoint.on('error', (err) => errors.push(err));
  endpoint.on('connection', (conn) => {
    accepted.push(conn);
    echo(conn, errors);
  });
  return { endpoint, certificates, errors, accepted };
}

/** Connects a test client to `endpoint`, pinned to certificate A unless told otherwise. */
async function connect(
  endpoint: QuicEndpoint,
  options: Partial<QuicTestClientOptions> = {},
): Promise<QuicTestClient> {
  const client = await QuicTestClient.connect({
    host: endpoint.address.host,
    port: endpoint.port,
    expectedSha256: certA.sha256,
    ...options,
  });
  cleanups.push(() => client.close());
  return client;
}

/** Lets two event-loop turns pass: closed handles leave libuv's list a turn after their callbacks. */
async function loopTurns(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
}

/** How many live handles or requests of a kind (`UDPWrap`, `Timeout`, …) the process holds. */
function countResources(kind: string): number {
  return process.getActiveResourcesInfo().filter((r) => r === kind).length;
}

/** Resolves with the `closed` info of `conn`. */
function closedInfo(conn: QuicConnection): Promise<QuicCloseInfo> {
  const known = conn.closeInfo;
  if (known !== undefined) return Promise.resolve(known);
  return new Promise((resolve) => conn.on('closed', resolve));
}

/** Resolves with the next connection the endpoint accepts. */
function nextConnection(endpoint: QuicEndpoint): Promise<QuicConnection> {
  return new Promise((resolve) => {
    const off = endpoint.on('connection', (conn) => {
      off();
      resolve(conn);
    });
  });
}

/** Binds a plain UDP socket on 127.0.0.1 for raw packets; closed after the test. */
async function rawSocket(): Promise<Socket> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => socket.close(() => resolve())));
  return socket;
}

/** Resolves with the next datagram `socket` receives. */
function nextMessage(socket: Socket): Promise<Buffer> {
  return new Promise((resolve) => socket.once('message', (msg) => resolve(msg)));
}

/**
 * A client Initial-looking datagram with an unsupported version, padded to 1200 bytes.
 * Long header: 1|1|type(2)|reserved(4), version (32), DCID length + DCID, SCID length + SCID.
 */
function unknownVersionPacket(dcid: Uint8Array, scid: Uint8Array): Buffer {
  const packet = Buffer.alloc(1200);
  packet[0] = 0xc0; // long header, fixed bit, type Initial
  packet.writeUInt32BE(0x1a2a3a4a, 1); // a reserved (greased) version
  packet[5] = dcid.byteLength;
  packet.set(dcid, 6);
  packet[6 + dcid.byteLength] = scid.byteLength;
  packet.set(scid, 7 + dcid.byteLength);
  return packet;
}

describe('resolveTransportOptions', () => {
  it('applies the defaults, keeps only transport keys and freezes the result', () => {
    const resolved = resolveTransportOptions({ maxIdleTimeoutMs: 5_000, host: '::' } as never);
    expect(resolved).toMatchObject({
      alpn: ['h3'],
      maxIdleTimeoutMs: 5_000,
      maxSendUdpPayload: 1350,
      maxRecvUdpPayload: 1500,
      initialMaxData: 10_000_000,
      initialMaxStreamData: 1_000_000,
      maxStreamsBidi: 100,
      maxStreamsUni: 100,
      congestionControl: 'bbr',
      pacing: true,
    });
    expect('host' in resolved).toBe(false);
    expect(Object.isFrozen(resolved)).toBe(true);
  });

  it('names the key, the value and what was expected when an option is invalid', () => {
    expect(() => resolveTransportOptions({ congestionControl: 'bbr2' as CongestionControl })).toThrow(
      'QUIC option congestionControl must be one of cubic, reno, bbr, got bbr2',
    );
    expect(() => resolveTransportOptions({ maxSendUdpPayload: 1000 })).toThrow(
      'QUIC option maxSendUdpPayload must be an integer from 1200 to 65527, got 1000',
    );
    expect(() => resolveTransportOptions({ alpn: [] })).toThrow(TypeError);
  });
});

describe('QuicEndpoint', () => {
  it.each(CONGESTION_CONTROLLERS)('runs with the %s congestion controller', async (congestionControl) => {
    const { endpoint, errors } = await startEndpoint({ congestionControl });
    const client = await connect(endpoint);
    await client.write(0, randomBytes(200_000), true);
    expect((await client.readAll(0)).byteLength).toBe(200_000);
    expect(errors).toEqual([]);
  });

  it('completes a handshake with ALPN h3 and presents the pinned certificate', async () => {
    const { endpoint, errors } = await startEndpoint();
    const serverSide = nextConnection(endpoint);
    const client = await connect(endpoint);
    const conn = await serverSide;

    expect(client.alpn).toBe('h3');
    expect(conn.alpn).toBe('h3');
    expect(conn.established).toBe(true);
    expect(Buffer.from(client.peerCertificateSha256 ?? []).equals(Buffer.from(certA.sha256))).toBe(true);
    expect(endpoint.connectionCount).toBe(1);
    expect(endpoint.port).toBeGreaterThan(0);
    expect(errors).toEqual([]);
  });

  it('echoes 3 MB on a bidirectional stream through flow control', async () => {
    const { endpoint, errors } = await startEndpoint();
    const client = await connect(endpoint);
    const payload = randomBytes(3_000_000);

    const [, echoed] = await Promise.all([client.write(0, payload, true), client.readAll(0, 30_000)]);

    expect(echoed.byteLength).toBe(payload.byteLength);
    expect(Buffer.from(echoed).equals(payload)).toBe(true);
    expect(errors).toEqual([]);
  });

  it('opens server streams and reports a peer reset with its code', async () => {
    const { endpoint } = await startEndpoint();
    const serverSide = nextConnection(endpoint);
    const client = await connect(endpoint);
    const conn = await serverSide;

    const uni = conn.openStream('uni');
    const bidi = conn.openStream('bidi');
    expect([uni, bidi]).toEqual([3, 1]);
    expect(conn.openStream('uni')).toBe(7);
    expect(conn.streamSend(uni, encoder.encode('from the server'), true)).toBe(15);
    expect(decoder.decode(await client.readAll(uni))).toBe('from the server');

    const reset = new Promise<number>((resolve) => {
      conn.on('streamReadable', (id) => {
        if (id !== 8) return;
        for (;;) {
          const read = conn.streamRecv(id);
          if (read === null) return;
          if (read.type === 'reset') {
            resolve(read.errorCode);
            return;
          }
        }
      });
    });
    await client.write(8, encoder.encode('partial'), false);
    client.resetStream(8, 0x52);
    expect(await reset).toBe(0x52);
  });

  it('carries datagrams both ways', async () => {
    const { endpoint, errors } = await startEndpoint();
    const client = await connect(endpoint);
    // Chromium sends at most 1199-byte datagrams; cover small to that size.
    for (const size of [1, 17, 500, 1000, 1199]) {
      const datagram = randomBytes(size);
      expect(client.sendDatagram(datagram)).toBe(true);
      const back = await client.nextDatagram();
      expect(Buffer.from(back).equals(datagram)).toBe(true);
    }
    expect(errors).toEqual([]);
  });

  it('rejects a datagram larger than maxDatagramSize() with a coded error and sends one that fits', async () => {
    const { endpoint } = await startEndpoint();
    const serverSide = nextConnection(endpoint);
    const client = await connect(endpoint);
    const conn = await serverSide;
    const max = conn.maxDatagramSize();
    expect(max).toBeGreaterThanOrEqual(1200);

    let thrown: unknown;
    try {
      conn.datagramSend(new Uint8Array(max + 1));
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(TransportError);
    expect(isTransportError(thrown, 'datagram-too-large')).toBe(true);

    expect(conn.datagramSend(new Uint8Array(max).fill(7))).toBe(true);
    expect((await client.nextDatagram()).byteLength).toBe(max);
  });

  it('serves 20 concurrent connections', async () => {
    const { endpoint, errors, accepted } = await startEndpoint();
    const clients = await Promise.all(Array.from({ length: 20 }, () => connect(endpoint)));
    expect(endpoint.connectionCount).toBe(20);

    const replies = await Promise.all(
      clients.map(async (client, i) => {
        await client.write(0, encoder.encode(`client ${i}`), true);
        return decoder.decode(await client.readAll(0));
      }),
    );
    expect(replies).toEqual(clients.map((_, i) => `client ${i}`));
    // Every handshake has completed on the server by now (each echo needed it).
    expect(new Set(accepted.map((c) => c.id)).size).toBe(20);
    expect(errors).toEqual([]);
  });

  it('reports stats from the active path', async () => {
    const { endpoint } = await startEndpoint();
    const serverSide = nextConnection(endpoint);
    const client = await connect(endpoint);
    const conn = await serverSide;
    await client.write(0, randomBytes(100_000), true);
    await client.readAll(0);

    const stats = conn.stats();
    expect(stats.sentPackets).toBeGreaterThan(50);
    expect(stats.recvPackets).toBeGreaterThan(50);
    expect(stats.sentBytes).toBeGreaterThan(100_000);
    expect(stats.cwndBytes).toBeGreaterThan(0);
    expect(stats.rttMs).toBeGreaterThanOrEqual(0);
    expect(stats.deliveryRateBps).toBeGreaterThan(0);
    // A peer on loopback gets the larger packets of loopbackMaxSendUdpPayload.
    expect(stats.pmtuBytes).toBe(1472);
    expect(stats.lostPackets).toBe(0);
    expect(stats.sendQueueDatagrams).toBe(0);
    // Every packet left in batches (sendmmsg with GSO), none one by one.
    expect(endpoint.sendMode).toBe('gso');
    expect(endpoint.counters()).toMatchObject({ fallbackPackets: 0, sendErrors: 0 });
    // (QUIC packets coalesced in one datagram during the handshake count once here.)
    expect(endpoint.counters().batchedPackets).toBeGreaterThan(50);
    // The client's datagrams were read with recvmmsg and reached quiche (which counts the QUIC
    // packets coalesced in a handshake datagram one by one).
    expect(endpoint.receiveMode).toBe('recvmmsg');
    expect(endpoint.counters().receivedPackets).toBeGreaterThan(50);
    expect(endpoint.counters().receivedPackets).toBeLessThanOrEqual(stats.recvPackets);
    expect(endpoint.counters().receiveReads).toBeLessThanOrEqual(endpoint.counters().receivedPackets);
  });

  it('sends and receives packets one by one through dgram when batching is off, with the loopback size asked for', async () => {
    const { endpoint } = await startEndpoint({
      batchedSends: false,
      batchedReceives: false,
      loopbackMaxSendUdpPayload: 1350,
    });
    const serverSide = nextConnection(endpoint);
    const client = await connect(endpoint);
    const conn = await serverSide;
    const payload = randomBytes(50_000);
    await client.write(0, payload, true);
    expect(Buffer.from(await client.readAll(0)).equals(payload)).toBe(true);
    expect(conn.stats().pmtuBytes).toBe(1350);
    expect(endpoint.sendMode).toBe('dgram');
    expect(endpoint.receiveMode).toBe('dgram');
    expect(endpoint.counters()).toMatchObject({ batchedPackets: 0, sendErrors: 0 });
    expect(endpoint.counters().fallbackPackets).toBeGreaterThan(25);
    expect(endpoint.counters().receiveReads).toBe(endpoint.counters().receivedPackets);
    expect(endpoint.counters().receivedPackets).toBeGreaterThan(25);
    expect(endpoint.counters().receivedPackets).toBeLessThanOrEqual(conn.stats().recvPackets);
  });

  it('closes a silent connection after the idle timeout and forgets it', async () => {
    const { endpoint } = await startEndpoint({ maxIdleTimeoutMs: 300 });
    const serverSide = nextConnection(endpoint);
    const client = await connect(endpoint);
    const conn = await serverSide;

    const info = await closedInfo(conn);
    expect(info.initiator).toBe('idle-timeout');
    expect(endpoint.connectionCount).toBe(0);
    expect((await client.waitClosed()).timedOut).toBe(true);

    let thrown: unknown;
    try {
      conn.streamSend(1, encoder.encode('late'));
    } catch (err) {
      thrown = err;
    }
    expect(isTransportError(thrown, 'closed')).toBe(true);
  });

  it('delivers a server close with its application code and reason to the client', async () => {
    const { endpoint } = await startEndpoint();
    const serverSide = nextConnection(endpoint);
    const client = await connect(endpoint);
    const conn = await serverSide;
    const serverClosed = closedInfo(conn);

    conn.close(0x100, 'bye');
    const seen = await client.waitClosed();
    expect(seen).toMatchObject({ byPeer: true, isApp: true, code: 0x100, reason: 'bye' });
    expect(await serverClosed).toEqual({
      initiator: 'local',
      applicationError: true,
      code: 0x100,
      reason: 'bye',
    });
    expect(endpoint.connectionCount).toBe(0);
  });

  it('reports a client close as initiated by the peer', async () => {
    const { endpoint } = await startEndpoint();
    const serverSide = nextConnection(endpoint);
    const client = await connect(endpoint);
    const conn = await serverSide;
    const serverClosed = closedInfo(conn);

    await client.close();
    expect(await serverClosed).toEqual({
      initiator: 'peer',
      applicationError: true,
      code: 0,
      reason: 'client done',
    });
    expect(endpoint.connectionCount).toBe(0);
  });

  it('works over IPv6 on ::1', async () => {
    const { endpoint, errors } = await startEndpoint({ host: '::1' });
    expect(endpoint.address.host).toBe('::1');
    const client = await connect(endpoint);
    await client.write(0, encoder.encode('over v6'), true);
    expect(decoder.decode(await client.readAll(0))).toBe('over v6');
    expect(client.sendDatagram(encoder.encode('dgram v6'))).toBe(true);
    expect(decoder.decode(await client.nextDatagram())).toBe('dgram v6');
    expect(errors).toEqual([]);
  });

  it('accepts IPv4 and IPv6 clients on a dual-stack :: socket', async () => {
    const { endpoint, errors, accepted } = await startEndpoint({ host: '::' });
    const v4 = await connect(endpoint, { host: '127.0.0.1' });
    const v6 = await connect(endpoint, { host: '::1' });
    for (const [client, text] of [
      [v4, 'via v4'],
      [v6, 'via v6'],
    ] as const) {
      await client.write(0, encoder.encode(text), true);
      expect(decoder.decode(await client.readAll(0))).toBe(text);
    }
    expect(accepted.map((c) => c.remoteAddress.host).sort()).toEqual(['::1', '::ffff:127.0.0.1']);
    expect(errors).toEqual([]);
  });

  it('ignores handshakes beyond maxConnections', async () => {
    const { endpoint } = await startEndpoint({ maxConnections: 1 });
    await connect(endpoint);
    await expect(connect(endpoint, { timeoutMs: 300 })).rejects.toThrow(/timed out waiting for handshake/);
    expect(endpoint.counters().refused).toBeGreaterThanOrEqual(1);
    expect(endpoint.connectionCount).toBe(1);
  });

  it('answers an unknown QUIC version with version negotiation listing version 1', async () => {
    const { endpoint } = await startEndpoint();
    const socket = await rawSocket();
    const dcid = randomBytes(8);
    const scid = randomBytes(8);
    const reply = nextMessage(socket);
    socket.send(unknownVersionPacket(dcid, scid), endpoint.port, '127.0.0.1');
    const vn = await reply;

    // Version negotiation: 1|unused(7), version 0, DCID (= client SCID), SCID (= client DCID), versions.
    expect(vn[0]! & 0x80).toBe(0x80);
    expect(vn.readUInt32BE(1)).toBe(0);
    expect(vn[5]).toBe(8);
    expect(vn.subarray(6, 14).equals(scid)).toBe(true);
    expect(vn[14]).toBe(8);
    expect(vn.subarray(15, 23).equals(dcid)).toBe(true);
    const versions: number[] = [];
    for (let offset = 23; offset + 4 <= vn.byteLength; offset += 4) versions.push(vn.readUInt32BE(offset));
    expect(versions).toContain(1);
    expect(endpoint.counters().versionNegotiations).toBe(1);
    expect(endpoint.connectionCount).toBe(0);
  });

  it('drops malformed and unroutable datagrams and keeps serving', async () => {
    const { endpoint, errors } = await startEndpoint();
    const socket = await rawSocket();
    socket.send(Buffer.alloc(0), endpoint.port, '127.0.0.1');
    socket.send(Buffer.from([0xc0, 0x00]), endpoint.port, '127.0.0.1');
    // A short header for a connection id nobody issued.
    socket.send(Buffer.concat([Buffer.from([0x40]), randomBytes(40)]), endpoint.port, '127.0.0.1');
    // An Initial below the 1200-byte minimum.
    socket.send(
      unknownVersionPacket(randomBytes(8), randomBytes(8)).subarray(0, 600),
      endpoint.port,
      '127.0.0.1',
    );
    // Datagrams from one socket are handled in order: once this one is answered, all were seen.
    const reply = nextMessage(socket);
    socket.send(unknownVersionPacket(randomBytes(8), randomBytes(8)), endpoint.port, '127.0.0.1');
    await reply;

    const counters = endpoint.counters();
    expect(counters.malformed).toBeGreaterThanOrEqual(2);
    expect(counters.unroutable).toBeGreaterThanOrEqual(2);
    const client = await connect(endpoint);
    await client.write(0, encoder.encode('still here'), true);
    expect(decoder.decode(await client.readAll(0))).toBe('still here');
    expect(errors).toEqual([]);
  });

  it('gives new connections the current certificate while open ones keep theirs', async () => {
    const { endpoint, certificates } = await startEndpoint();
    const first = await connect(endpoint, { expectedSha256: certA.sha256 });
    certificates.use(certB);
    const second = await connect(endpoint, { expectedSha256: certB.sha256 });

    expect(Buffer.from(second.peerCertificateSha256 ?? []).equals(Buffer.from(certB.sha256))).toBe(true);
    await first.write(0, encoder.encode('old cert still works'), true);
    expect(decoder.decode(await first.readAll(0))).toBe('old cert still works');
    await expect(connect(endpoint, { expectedSha256: certA.sha256 })).rejects.toThrow(/does not match/);
  });

  it('refuses a client that does not offer h3', async () => {
    const { endpoint } = await startEndpoint();
    let established = 0;
    endpoint.on('connection', () => established++);
    // TLS alert no_application_protocol (120) as a QUIC CRYPTO_ERROR: 0x100 + 120 = 376.
    await expect(connect(endpoint, { alpn: ['hq-interop'] })).rejects.toThrow(
      'handshake failed with code 376',
    );
    expect(established).toBe(0);
  });

  it('refuses to start with a key that does not match the certificate', async () => {
    const broken = { ...certA, keyPem: certB.keyPem };
    await expect(
      QuicEndpoint.listen({ host: '127.0.0.1', port: 0, certificates: new SwitchableCertificates(broken) }),
    ).rejects.toThrow(TypeError);
  });

  it('close() ends every connection, releases the socket and leaves no handle behind', async () => {
    await loopTurns();
    const timersBefore = countResources('Timeout');
    const certificates = new SwitchableCertificates(certA);
    const endpoint = await QuicEndpoint.listen({ host: '127.0.0.1', port: 0, certificates });
    const accepted: QuicConnection[] = [];
    endpoint.on('connection', (conn) => accepted.push(conn));
    const clients = await Promise.all([1, 2, 3].map(() => connect(endpoint)));
    const serverClosed = Promise.all(accepted.map(closedInfo));

    await endpoint.close();
    await endpoint.close();

    for (const info of await serverClosed) expect(info.initiator).toBe('endpoint');
    for (const client of clients) {
      expect(await client.waitClosed()).toMatchObject({ byPeer: true, isApp: false, code: 0 });
    }
    expect(endpoint.connectionCount).toBe(0);

    // The port is free again.
    const rebound = createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      rebound.once('error', reject);
      rebound.bind({ port: endpoint.port, address: '127.0.0.1', exclusive: true }, () => resolve());
    });
    await new Promise<void>((resolve) => rebound.close(() => resolve()));
    for (const client of clients) await client.close();

    await loopTurns();
    expect(countResources('UDPWrap')).toBe(0);
    // No timer of ours is left; an unrelated one alive before may have fired meanwhile.
    expect(countResources('Timeout')).toBeLessThanOrEqual(timersBefore);
    expect(countResources('Immediate')).toBe(0);
  });
});

describe('QuicConnection life', () => {
  it('stays established while closing, then closes once: close() again and late datagrams change nothing', async () => {
    const { endpoint, errors } = await startEndpoint();
    const serverSide = nextConnection(endpoint);
    const client = await connect(endpoint);
    const conn = await serverSide;
    const serverClosed = closedInfo(conn);
    expect(conn.established).toBe(true);
    expect(conn.closed).toBe(false);

    conn.close(0x100, 'bye');
    conn.close(0x101, 'again');
    expect(conn.established).toBe(true);
    const info = await serverClosed;
    expect(info).toMatchObject({ initiator: 'local', code: 0x100, reason: 'bye' });
    await client.waitClosed();

    expect(conn.closed).toBe(true);
    expect(conn.established).toBe(true);
    conn.close(0x102, 'after the end');
    // A datagram that was already on its way when the connection closed.
    conn.handlePacket(new Uint8Array(1200), { host: '127.0.0.1', port: 9 });
    conn.handlePacket(new Uint8Array(40), { host: '127.0.0.1', port: 9 });
    expect(conn.latePackets).toBe(2);
    expect(conn.closeInfo).toEqual(info);
    expect(conn.maxDatagramSize()).toBe(0);
    expect(errors).toEqual([]);
  });

  it('reports a listener that throws to the endpoint error event, and the other listeners still run', async () => {
    const { endpoint, errors } = await startEndpoint();
    const serverSide = nextConnection(endpoint);
    const client = await connect(endpoint);
    const conn = await serverSide;
    const bug = new Error('a datagram listener bug');
    conn.on('datagram', () => {
      throw bug;
    });

    expect(client.sendDatagram(encoder.encode('still echoed'))).toBe(true);
    // The echo listener, added first, ran regardless.
    expect(decoder.decode(await client.nextDatagram())).toBe('still echoed');
    expect(errors).toEqual([bug]);
  });

  it('refuses an invalid stream id or error code with a TypeError, whatever its state', async () => {
    const { endpoint } = await startEndpoint();
    const serverSide = nextConnection(endpoint);
    await connect(endpoint);
    const conn = await serverSide;
    expect(() => conn.streamSend(-1, new Uint8Array(1))).toThrow(TypeError);
    expect(() => conn.close(-5)).toThrow(TypeError);
    expect(() => conn.streamShutdown(1, 'write', 1.5)).toThrow(TypeError);
    expect(conn.closed).toBe(false);
  });
});
