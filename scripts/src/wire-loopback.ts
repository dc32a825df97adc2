/**
 * What `npm start` runs until the cloud service and the daemon exist: a synthetic 30 fps video
 * stream packed with FEC, sent over real UDP on loopback through a seeded lossy link, and
 * reassembled, with a status line every second.
 *
 *   npm start -- [--loss 0.05] [--burst 3] [--frames N] [--seed 1]
 */
import dgram from 'node:dgram';
import { parseArgs } from 'node:util';
import { FramePacker, Reassembler, wrapU32 } from '@svc/wire';
import { burstLoss, independentLoss, randomBytes, randomInt, seededRandom } from '@svc/wire/sim';

const { values } = parseArgs({
  options: {
    loss: { type: 'string', default: '0.05' },
    burst: { type: 'string', default: '1' },
    frames: { type: 'string' },
    seed: { type: 'string', default: '1' },
  },
});

const lossRate = Number(values.loss);
const burst = Number(values.burst);
const frameLimit = values.frames === undefined ? Number.POSITIVE_INFINITY : Number(values.frames);
const seed = Number(values.seed);
if (!(lossRate >= 0 && lossRate < 1) || !Number.isInteger(burst) || burst < 1 || !(frameLimit > 0)) {
  console.error('usage: npm run demo:wire -- [--loss 0..0.99] [--burst N>=1] [--frames N>0] [--seed N]');
  process.exit(2);
}

const FPS = 30;
const PARITY = { delta: { rate: 0.15, minPerBlock: 3 }, key: { rate: 0.3, minPerBlock: 3 } };
const random = seededRandom(seed);
const link =
  burst > 1
    ? burstLoss(lossRate, burst, seededRandom(seed + 1))
    : independentLoss(lossRate, seededRandom(seed + 1));

const receiver = dgram.createSocket('udp4');
const sender = dgram.createSocket('udp4');
const totals = { framesSent: 0, datagrams: 0, dropped: 0, bytes: 0, delivered: 0, repaired: 0, lost: 0 };
const reassembler = new Reassembler({
  channel: 1,
  onFrame: (frame) => {
    totals.delivered++;
    if (frame.chunksRecovered > 0) totals.repaired++;
  },
  onFrameLost: (loss) => {
    totals.lost += loss.count;
  },
});
receiver.on('message', (msg) => {
  try {
    reassembler.handleDatagram(msg, performance.now());
  } catch (err) {
    console.error(`dropped a malformed datagram: ${(err as Error).message}`);
  }
});

await new Promise<void>((resolve) => receiver.bind(0, '127.0.0.1', resolve));
const { port } = receiver.address();
console.log(`wire loopback: 30 fps synthetic video to udp://127.0.0.1:${port}, link loses ${link.label}`);
console.log('(the cloud service and the robot daemon take this command over as they land; Ctrl-C stops)');

const packer = new FramePacker({ channel: 1, firstFrameId: randomInt(random, 0, 0xffff) });
const started = performance.now();
let lastReport = started;
let index = 0;
const timer = setInterval(sendFrame, 1000 / FPS);
process.once('SIGINT', stop);
process.once('SIGTERM', stop);

function sendFrame(): void {
  const keyframe = index % 300 === 0;
  const data = randomBytes(random, keyframe ? 40_000 : randomInt(random, 2000, 10_000));
  const nowUs = wrapU32((performance.now() - started) * 1000);
  const packed = packer.pack(
    {
      data,
      keyframe,
      captureTimestampUs: nowUs,
      gopPosition: index % 300,
      parity: keyframe ? PARITY.key : PARITY.delta,
    },
    nowUs,
  );
  totals.framesSent++;
  for (const datagram of packed.datagrams) {
    totals.datagrams++;
    totals.bytes += datagram.byteLength;
    if (link.lose()) totals.dropped++;
    else sender.send(datagram, port, '127.0.0.1');
  }
  index++;
  const now = performance.now();
  if (now - lastReport >= 1000) {
    lastReport = now;
    reassembler.handleTick(now);
    console.log(status(now));
  }
  if (index >= frameLimit) stop();
}

function status(now: number): string {
  const seconds = (now - started) / 1000;
  return (
    `t=${seconds.toFixed(0)}s sent ${totals.framesSent} frames (${totals.datagrams} datagrams, ` +
    `${totals.dropped} dropped by the link), delivered ${totals.delivered} (${totals.repaired} repaired by FEC), ` +
    `lost ${totals.lost}, ${((totals.bytes * 8) / seconds / 1e6).toFixed(2)} Mbit/s`
  );
}

function stop(): void {
  clearInterval(timer);
  // Let the last datagrams land, then give up whatever is still incomplete.
  setTimeout(() => {
    reassembler.handleTick(Number.POSITIVE_INFINITY);
    console.log(
      `${status(performance.now())}\nstopped: ${totals.delivered} of ${totals.framesSent} frames delivered`,
    );
    sender.close();
    receiver.close();
  }, 100);
}
