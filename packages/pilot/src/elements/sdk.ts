/**
 * The connection calls the elements use that the SDK is gaining in the same change (the stale
 * watch's `picture` event on the connection, the paint report's picture age), and the command and
 * kernel calls. Kept in this one file so wiring them for good touches nothing else: each function
 * says what it expects.
 */
import { activeFecKernel } from '@svc/wire';
import type { PilotConnection } from '../connection/connection.js';

/**
 * What the stale watch says of one video channel's picture: `waiting` before the first paint,
 * `live` while new frames are painted, `stale` when none was painted for longer than the
 * threshold; `ageMs` is the age of the picture on screen (growing while stale).
 */
export interface PictureState {
  readonly kind: 'waiting' | 'live' | 'stale';
  readonly ageMs: number;
}

type LooseOn = (event: string, listener: (...args: never[]) => void) => () => void;

/** Listens to the connection's `picture` event (channel, state); returns the function that stops. */
export function onPicture(
  connection: PilotConnection,
  listener: (channel: number, state: PictureState) => void,
): () => void {
  return (connection.on as unknown as LooseOn).call(connection, 'picture', listener);
}

/**
 * Sends one command; `always` for the stop and dead-man zero commands, which go out even while
 * commands are held (stale picture). `false` when nothing was sent.
 */
export function sendCommand(
  connection: PilotConnection,
  channel: string | number,
  payload: string,
  always: boolean,
): boolean {
  return connection.sendCommand(channel, payload, { always });
}

/**
 * The Reed-Solomon kernel this page runs: `simd` when WebAssembly SIMD compiled (the page's
 * Content-Security-Policy must allow it with `'wasm-unsafe-eval'`), else `scalar`.
 */
export function fecKernel(): string {
  return activeFecKernel();
}

/**
 * The age of a painted picture, ms, from its capture on the robot's clock to its paint
 * (`PlayerPaintReport.pictureAgeMs`); `NaN` when unknown.
 */
export function pictureAgeOf(report: object): number {
  const age = (report as { pictureAgeMs?: unknown }).pictureAgeMs;
  return typeof age === 'number' ? age : Number.NaN;
}
