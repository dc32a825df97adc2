/**
 * The command JSON the cockpit sends on a robot's command channel, version 1
 * (`docs/protocol/commands.md`), and the pure mappings from the keyboard and from a gamepad to
 * it. Robot code parses these bytes: change them only with a new `v`.
 */

/** The version every command carries in `v`. */
export const COMMAND_VERSION = 1;

/** Drive commands go out this often while the driver holds input (the dead-man rule's clock). */
export const COMMAND_RATE_HZ = 20;

/** Interval between two drive commands, ms. */
export const COMMAND_INTERVAL_MS = 1000 / COMMAND_RATE_HZ;

/** A stick position closer to the centre than this (a fraction of full travel) counts as released. */
export const DEFAULT_DEAD_ZONE = 0.15;

/** How far the keyboard drives, as a fraction of full speed (keys are all or nothing). */
export const DEFAULT_KEYBOARD_SPEED = 0.5;

/** Decimal places kept of `linear` and `angular` (the JSON stays short and stable). */
const DIGITS = 3;

/**
 * Move at `linear` × the robot's top speed forward (negative: backward) while turning at
 * `angular` × its top turn rate, positive to the left (counter-clockwise seen from above). Both
 * in [-1, 1]; `{linear: 0, angular: 0}` is the dead-man zero command.
 */
export interface DriveCommand {
  readonly v: typeof COMMAND_VERSION;
  readonly type: 'drive';
  /** +1 per command of this page's session (from 1), so robot code can spot gaps. */
  readonly seq: number;
  readonly linear: number;
  readonly angular: number;
}

/** Stop now (the on-screen stop button, or the gamepad's east face button). */
export interface StopCommand {
  readonly v: typeof COMMAND_VERSION;
  readonly type: 'stop';
  readonly seq: number;
}

/** Every command of version 1. */
export type Command = DriveCommand | StopCommand;

/** What the operator's input asks for, before it becomes a command. */
export interface DriveInput {
  readonly linear: number;
  readonly angular: number;
}

/** No input: the robot holds still. */
export const NEUTRAL: DriveInput = Object.freeze({ linear: 0, angular: 0 });

/** Keys that drive (`KeyboardEvent.key`; letters in either case). */
const KEY_DIRECTIONS: Readonly<Record<string, 'forward' | 'back' | 'left' | 'right'>> = {
  ArrowUp: 'forward',
  w: 'forward',
  W: 'forward',
  ArrowDown: 'back',
  s: 'back',
  S: 'back',
  ArrowLeft: 'left',
  a: 'left',
  A: 'left',
  ArrowRight: 'right',
  d: 'right',
  D: 'right',
};

/** Whether `key` (a `KeyboardEvent.key`) is one of the drive keys: the arrows and WASD. */
export function isDriveKey(key: string): boolean {
  return Object.hasOwn(KEY_DIRECTIONS, key);
}

/**
 * The input of the drive keys held now: up/W forward, down/S back, left/A turn left, right/D turn
 * right, each at `speed`; opposite keys cancel out.
 *
 * @throws {TypeError} when `speed` is not in (0, 1].
 */
export function keyboardInput(held: Iterable<string>, speed = DEFAULT_KEYBOARD_SPEED): DriveInput {
  if (!(speed > 0 && speed <= 1)) throw new TypeError(`keyboard speed must be in (0, 1], got ${speed}`);
  const on = new Set<string>();
  for (const key of held) {
    const direction = KEY_DIRECTIONS[key];
    if (direction !== undefined) on.add(direction);
  }
  const linear = (on.has('forward') ? 1 : 0) - (on.has('back') ? 1 : 0);
  const angular = (on.has('left') ? 1 : 0) - (on.has('right') ? 1 : 0);
  return { linear: linear * speed, angular: angular * speed };
}

/** The part of a `Gamepad` the mapping reads (tests pass plain objects). */
export interface GamepadLike {
  readonly connected: boolean;
  readonly mapping: string;
  readonly axes: readonly number[];
  readonly buttons: readonly { readonly pressed: boolean; readonly value: number }[];
}

/** What one gamepad asks for: a drive input, and whether its stop button is down. */
export interface GamepadReading {
  readonly input: DriveInput;
  readonly stop: boolean;
}

/** Standard mapping (W3C Gamepad): the left stick's axes, the right stick's X, the east face button. */
const STANDARD = { leftX: 0, leftY: 1, rightX: 2, stopButton: 1 } as const;

/**
 * One gamepad in the W3C standard mapping: the left stick's Y drives forward (up) and back, the
 * left stick's X, or the right stick's X when pushed further, turns (left is positive); the east
 * face button (B on an Xbox pad, circle on a PlayStation pad) stops. Each axis has a dead zone:
 * within `deadZone` of the centre it reads 0, beyond it the rest of the travel is scaled back to
 * 0..1 so small moves stay possible. A pad that is disconnected or not in the standard mapping
 * reads as neutral (its axes could mean anything).
 *
 * @throws {TypeError} when `deadZone` is not in [0, 1).
 */
export function gamepadReading(pad: GamepadLike, deadZone = DEFAULT_DEAD_ZONE): GamepadReading {
  if (!(deadZone >= 0 && deadZone < 1)) throw new TypeError(`dead zone must be in [0, 1), got ${deadZone}`);
  if (!pad.connected || pad.mapping !== 'standard') return { input: NEUTRAL, stop: false };
  const axis = (index: number) => applyDeadZone(pad.axes[index] ?? 0, deadZone);
  const leftX = axis(STANDARD.leftX);
  const rightX = axis(STANDARD.rightX);
  const turn = Math.abs(rightX) > Math.abs(leftX) ? rightX : leftX;
  return {
    // Screen axes: up and left are negative; the robot's forward and left turn are positive.
    input: { linear: clean(-axis(STANDARD.leftY)), angular: clean(-turn) },
    stop: pad.buttons[STANDARD.stopButton]?.pressed === true,
  };
}

/** The first gamepad in the standard mapping that asks for anything, else neutral. */
export function gamepadsReading(
  pads: readonly (GamepadLike | null)[],
  deadZone = DEFAULT_DEAD_ZONE,
): GamepadReading {
  let stop = false;
  let input = NEUTRAL;
  for (const pad of pads) {
    if (pad === null) continue;
    const reading = gamepadReading(pad, deadZone);
    stop ||= reading.stop;
    if (isNeutral(input) && !isNeutral(reading.input)) input = reading.input;
  }
  return { input, stop };
}

/** Whether `input` asks for no motion. */
export function isNeutral(input: DriveInput): boolean {
  return input.linear === 0 && input.angular === 0;
}

/** The larger of two inputs, axis by axis (by magnitude): keyboard and gamepad together. */
export function combineInputs(a: DriveInput, b: DriveInput): DriveInput {
  const pick = (x: number, y: number) => (Math.abs(y) > Math.abs(x) ? y : x);
  return { linear: pick(a.linear, b.linear), angular: pick(a.angular, b.angular) };
}

/** A drive command for `input`, clamped to [-1, 1] and rounded to 3 decimals. */
export function driveCommand(input: DriveInput, seq: number): DriveCommand {
  return {
    v: COMMAND_VERSION,
    type: 'drive',
    seq,
    linear: clean(input.linear),
    angular: clean(input.angular),
  };
}

/** A stop command. */
export function stopCommand(seq: number): StopCommand {
  return { v: COMMAND_VERSION, type: 'stop', seq };
}

/** The bytes on the wire: JSON with the keys in the documented order, no spaces. */
export function encodeCommand(command: Command): string {
  switch (command.type) {
    case 'drive':
      return JSON.stringify({
        v: command.v,
        type: command.type,
        seq: command.seq,
        linear: command.linear,
        angular: command.angular,
      });
    case 'stop':
      return JSON.stringify({ v: command.v, type: command.type, seq: command.seq });
    default:
      return command satisfies never;
  }
}

function applyDeadZone(value: number, deadZone: number): number {
  if (!Number.isFinite(value)) return 0;
  const magnitude = Math.min(1, Math.abs(value));
  if (magnitude <= deadZone) return 0;
  return (Math.sign(value) * (magnitude - deadZone)) / (1 - deadZone);
}

/** Clamped to [-1, 1], rounded, and never `-0` (it would print as `0` but compare oddly). */
function clean(value: number): number {
  const scale = 10 ** DIGITS;
  const rounded = Math.round(Math.max(-1, Math.min(1, value)) * scale) / scale;
  return rounded === 0 ? 0 : rounded;
}
