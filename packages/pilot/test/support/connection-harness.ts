/**
 * A {@link PilotConnection} driven on fake time with fake transports and a fake offer source: the
 * test plays svc-cloud and the robot.
 */
import { FakeClock, flushMicrotasks, type LogRecord, memoryLogger } from '@svc/runtime/testing';
import { type ControlMessage, FramePacker, NO_PARITY } from '@svc/wire';
import { expect } from 'vitest';
import {
  PilotConnection,
  type PilotConnectOptions,
  type RequestOfferOptions,
  type RobotOffer,
} from '../../src/index.js';
import { type FakeTransport, fakeTransports } from './fake-transport.js';

export const SIGNAL_URL = 'wss://cloud.example/ws';
export const URLS = ['https://10.0.0.1:4433/', 'https://10.0.0.2:4433/'];
export const HASH = 'ab'.repeat(32);

export const OFFER: RobotOffer = {
  sessionId: 'offer-1',
  robotId: 'r1',
  role: 'driver',
  urls: URLS,
  candidates: [],
  certificateHashes: [HASH],
  channels: [],
  relay: false,
};

export const WELCOME = {
  type: 'welcome',
  session_id: 'session-1',
  role: 'driver',
  channels: [
    { id: 2, name: 'lidar', kind: 'sensor', codec: '' },
    { id: 3, name: 'drive', kind: 'command', codec: '' },
  ],
  qos: { profile: 'balanced', presentation_delay_ms: 100 },
} as const satisfies ControlMessage;

/** One sensor message as the robot sends it: one frame of chunk datagrams on channel 2. */
export function sensorDatagrams(text: string, frameId = 0): Uint8Array[] {
  const packer = new FramePacker({ channel: 2, firstFrameId: frameId });
  const data = new TextEncoder().encode(text);
  return packer.pack({ data, keyframe: true, captureTimestampUs: 0, gopPosition: 0, parity: NO_PARITY }, 0)
    .datagrams;
}

/** Lets the promise chains of streams and attempts run (no time passes). */
export const settle = () => flushMicrotasks(200);

export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
}

export function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

export interface Harness {
  readonly clock: FakeClock;
  readonly connection: PilotConnection;
  readonly transports: FakeTransport[];
  /** Each `requestOffer` call: its options and the answer the test gives. */
  readonly offers: { readonly options: RequestOfferOptions; readonly answer: Deferred<RobotOffer> }[];
  readonly states: [string, string | undefined][];
  readonly sensors: string[];
  readonly offerEvents: RobotOffer[];
  readonly logs: LogRecord[];
  /** The latest transport. */
  transport(): FakeTransport;
}

export type Overrides = Partial<
  Pick<
    PilotConnectOptions,
    'reconnect' | 'random' | 'token' | 'onState' | 'candidateStaggerMs' | 'closeOnPageHide' | 'pageEvents'
  >
> & {
  readonly offer?: { readonly urls: readonly string[]; readonly certificateHashes: readonly string[] };
};

export function harness(overrides: Overrides = {}): Harness {
  const clock = new FakeClock(1000);
  const { made, create } = fakeTransports();
  const offers: Harness['offers'] = [];
  const states: Harness['states'] = [];
  const sensors: string[] = [];
  const offerEvents: RobotOffer[] = [];
  const logger = memoryLogger();
  const { offer, onState, ...rest } = overrides;
  const source = offer !== undefined ? { offer } : { signalUrl: SIGNAL_URL, robotId: 'r1' };
  const connection = new PilotConnection({
    ...source,
    token: 'tok',
    container: {} as HTMLElement,
    clock,
    random: () => 0.5,
    logger,
    createTransport: create,
    requestOffer: (options) => {
      const answer = deferred<RobotOffer>();
      offers.push({ options, answer });
      return answer.promise;
    },
    onState: onState ?? ((state, detail) => states.push([state, detail])),
    onOffer: (o) => offerEvents.push(o),
    onSensor: (_channel, bytes) => sensors.push(new TextDecoder().decode(bytes)),
    ...rest,
  });
  return {
    clock,
    connection,
    transports: made,
    offers,
    states,
    sensors,
    offerEvents,
    logs: logger.records,
    transport: () => {
      const last = made.at(-1);
      if (last === undefined) throw new Error('no transport was made');
      return last;
    },
  };
}

/** Connects, gives the offer, lets the first candidate answer: `hello` is on its way. */
export async function toHandshake(h: Harness): Promise<FakeTransport> {
  if (h.connection.state === 'idle') h.connection.connect();
  await settle();
  h.offers.at(-1)?.answer.resolve(OFFER);
  await settle();
  const transport = h.transport();
  transport.answer();
  await settle();
  return transport;
}

/** All the way to `connected`. */
export async function toConnected(h: Harness, welcome: ControlMessage = WELCOME): Promise<FakeTransport> {
  const transport = await toHandshake(h);
  transport.say(welcome);
  await settle();
  expect(h.connection.state).toBe('connected');
  return transport;
}
