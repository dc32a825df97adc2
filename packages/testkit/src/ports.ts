import { createSocket } from 'node:dgram';
import { createServer, type Server } from 'node:net';

/** A UDP port on 127.0.0.1 that was free a moment ago (bound, read, released). */
export async function freeUdpPort(): Promise<number> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return port;
}

/** A TCP port on 127.0.0.1 that was free a moment ago, for a process that must be told its port. */
export async function freeTcpPort(): Promise<number> {
  const server = createServer();
  const port = await listenLocal(server);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Listens on 127.0.0.1, port 0, and returns the port (a `node:net` or `node:http` server). */
export function listenLocal(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      const address = server.address();
      if (address === null || typeof address !== 'object') reject(new Error('listen(0) gave no port'));
      else resolve(address.port);
    });
  });
}

/** Closes an HTTP server, its idle and open connections included. */
export function closeServer(server: Server & { closeAllConnections?: () => void }): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((err) => (err ? reject(err) : resolve()));
    server.closeAllConnections?.();
  });
}
