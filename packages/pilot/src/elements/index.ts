/**
 * `@svc/pilot/elements`: the cockpit as custom elements, `<svc-pilot>` (the whole cockpit for one
 * robot) and `<svc-video>` (one video channel), registered when this module is imported in a
 * browser (`docs/pilot.md`). The plain pilot page and the console use the same elements.
 *
 * @packageDocumentation
 */
import { SVC_PILOT_TAG, SvcPilotElement } from './svc-pilot.js';
import { SVC_VIDEO_TAG, SvcVideoElement } from './svc-video.js';

export {
  COMMAND_INTERVAL_MS,
  COMMAND_RATE_HZ,
  COMMAND_VERSION,
  type Command,
  combineInputs,
  DEFAULT_DEAD_ZONE,
  DEFAULT_KEYBOARD_SPEED,
  type DriveCommand,
  type DriveInput,
  driveCommand,
  encodeCommand,
  type GamepadLike,
  type GamepadReading,
  gamepadReading,
  gamepadsReading,
  isDriveKey,
  isNeutral,
  keyboardInput,
  NEUTRAL,
  type StopCommand,
  stopCommand,
} from './command.js';
export { DriveControls, type DriveControlsOptions, type SendCommandOptions } from './controls.js';
export {
  type Refusal,
  type RefusalCode,
  refusal,
  refusalCodeOfConnection,
  refusalCodeOfOffer,
} from './refusal.js';
export type { PictureState } from './sdk.js';
export {
  SVC_PILOT_TAG,
  type SvcCommandDetail,
  type SvcControlPendingDetail,
  type SvcControlRequestDetail,
  type SvcControlResultDetail,
  type SvcDriverDetail,
  type SvcHandoverDetail,
  SvcPilotElement,
  type SvcRefusalDetail,
  type SvcRoleDetail,
  type SvcStaleDetail,
  type SvcStateDetail,
} from './svc-pilot.js';
export {
  SVC_VIDEO_TAG,
  type SvcPictureDetail,
  type SvcSourceDetail,
  SvcVideoElement,
  type VideoOverlay,
} from './svc-video.js';

/**
 * Registers `<svc-video>` and `<svc-pilot>` in `registry` (default the page's), each unless a
 * definition of that name exists already (a page that loads the SDK twice keeps the first).
 */
export function defineSvcElements(
  registry: CustomElementRegistry | undefined = globalThis.customElements,
): void {
  if (registry === undefined) return;
  if (registry.get(SVC_VIDEO_TAG) === undefined) registry.define(SVC_VIDEO_TAG, SvcVideoElement);
  if (registry.get(SVC_PILOT_TAG) === undefined) registry.define(SVC_PILOT_TAG, SvcPilotElement);
}

defineSvcElements();

declare global {
  interface HTMLElementTagNameMap {
    'svc-pilot': SvcPilotElement;
    'svc-video': SvcVideoElement;
  }
}
