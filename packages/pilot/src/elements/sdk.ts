/**
 * The connection calls the elements use, in one place: the stale watch's `picture` event, the
 * paint report's picture age, commands and the FEC kernel in use.
 */
import { activeFecKernel } from '@svc/wire';
import type { PilotConnection } from '../connection/connection.js';
import type { PilotPictureState } from '../connection/options.js';
import type { PlayerPaintReport } from '../video/player.js';

/**
 * What the stale watch says of one video channel's picture: `waiting` before the first paint,
 * `live` while new frames are painted, `stale` when none was painted for longer than the
 * threshold; `ageMs` is the age of the picture on screen (growing while stale).
 */
export type PictureState = PilotPictureState;

/** Listens to the connection's `picture` event (channel, state); returns the function that stops. */
export function onPicture(
  connection: PilotConnection,
  listener: (channel: number, state: PictureState) => void,
): () => void {
  return connection.on('picture', listener);
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
export function pictureAgeOf(report: PlayerPaintReport): number {
  return report.pictureAgeMs;
}
