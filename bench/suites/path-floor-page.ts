/**
 * Runs in Chromium for the `path` suite's floor of (a): a bare WebTransport page, no SDK, that
 * only notes when each burst of datagrams has fully arrived.
 */

/** Byte layout of a floor datagram (written by the suite, read here). */
export const FLOOR_LAYOUT = { burst: 0, index: 4, count: 6, sentUs: 8, header: 16 } as const;

export interface FloorSample {
  /** Per complete burst, ms: its first datagram sent → its last datagram read by the page. */
  readonly burstMs: number[];
  /** Per burst, ms: its first datagram sent → that datagram read by the page. */
  readonly firstMs: number[];
  /** Bursts of which a datagram never came. */
  readonly incomplete: number;
}

const epochMs = () => performance.timeOrigin + performance.now();

/**
 * {@link measureFloor} in a dedicated worker: WebTransport there has no page main thread in the
 * way. The worker runs this file's `measureFloor` source as it was bundled into the page.
 */
export async function measureFloorInWorker(
  url: string,
  hashHex: string,
  bursts: number,
): Promise<FloorSample> {
  const source = `const FLOOR_LAYOUT = ${JSON.stringify(FLOOR_LAYOUT)};
const epochMs = () => performance.timeOrigin + performance.now();
const measureFloor = ${measureFloor.toString()};
onmessage = async (event) => postMessage(await measureFloor(...event.data));`;
  const worker = new Worker(URL.createObjectURL(new Blob([source], { type: 'text/javascript' })));
  try {
    return await new Promise<FloorSample>((resolve, reject) => {
      worker.onmessage = (event: MessageEvent<FloorSample>) => resolve(event.data);
      worker.onerror = (event) => reject(new Error(`floor worker failed: ${event.message}`));
      worker.postMessage([url, hashHex, bursts]);
    });
  } finally {
    worker.terminate();
  }
}

/**
 * Opens a session to `url` pinned to `hashHex`, asks for `bursts` bursts on the control stream
 * and reads datagrams until the last burst is in (or 5 s of silence).
 */
export async function measureFloor(url: string, hashHex: string, bursts: number): Promise<FloorSample> {
  const hash = Uint8Array.from(hashHex.match(/../g)!.map((h) => Number.parseInt(h, 16)));
  const wt = new WebTransport(url, { serverCertificateHashes: [{ algorithm: 'sha-256', value: hash }] });
  await wt.ready;
  const reader = wt.datagrams.readable.getReader();
  const seen = new Map<number, { arrived: number; count: number; sentMs: number }>();
  const burstMs: number[] = [];
  const firstMs: number[] = [];
  let silence: ReturnType<typeof setTimeout> | undefined;
  const reading = (async () => {
    for (;;) {
      clearTimeout(silence);
      silence = setTimeout(() => void reader.cancel(), 5000);
      const { value, done } = await reader.read();
      if (done) return;
      const now = epochMs();
      const view = new DataView(value.buffer, value.byteOffset, value.byteLength);
      const burst = view.getUint32(FLOOR_LAYOUT.burst);
      const count = view.getUint16(FLOOR_LAYOUT.count);
      const sentMs = view.getFloat64(FLOOR_LAYOUT.sentUs) / 1000;
      let entry = seen.get(burst);
      if (entry === undefined) {
        entry = { arrived: 0, count, sentMs };
        seen.set(burst, entry);
        firstMs.push(now - sentMs);
      }
      entry.arrived++;
      if (entry.arrived === entry.count) burstMs.push(now - entry.sentMs);
      if (burst === bursts - 1 && entry.arrived === entry.count) return;
    }
  })();
  const control = await wt.createBidirectionalStream();
  const writer = control.writable.getWriter();
  await writer.write(new TextEncoder().encode(`go ${bursts}\n`));
  await reading;
  clearTimeout(silence);
  wt.close();
  const incomplete = [...seen.values()].filter((e) => e.arrived < e.count).length + (bursts - seen.size);
  return { burstMs, firstMs, incomplete };
}
