import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Serves `html` at `/` from 127.0.0.1 on a free port (a secure context for Chromium). */
export async function servePage(html: string): Promise<{ server: Server; origin: string }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(html);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, origin: `http://127.0.0.1:${port}` };
}
