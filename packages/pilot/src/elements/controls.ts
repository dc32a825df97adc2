import { assertTransition, type Clock, type TimerHandle, type TransitionTable } from '@svc/runtime';
import {
  COMMAND_INTERVAL_MS,
  type Command,
  combineInputs,
  DEFAULT_DEAD_ZONE,
  DEFAULT_KEYBOARD_SPEED,
  type DriveInput,
  driveCommand,
  type GamepadLike,
  gamepadsReading,
  isDriveKey,
  isNeutral,
  keyboardInput,
  NEUTRAL,
  stopCommand,
} from './command.js';

/** How a command goes out: `always` for stop and the dead-man zero (sent even while commands are held). */
export interface SendCommandOptions {
  readonly always: boolean;
}

/** What {@link DriveControls} is built with. */
export interface DriveControlsOptions {
  /** Time and the command timer (tests pass a `FakeClock`). */
  readonly clock: Clock;
  /** Sends one command; `false` when it did not go out (no session, observer, commands held). */
  readonly send: (command: Command, options: SendCommandOptions) => boolean;
  /** The browser's gamepads (`navigator.getGamepads()`), read once per command interval. */
  readonly getGamepads?: () => readonly (GamepadLike | null)[];
  /** Fraction of full speed the keys drive at (default 0.5). */
  readonly keyboardSpeed?: number;
  /** Stick dead zone, a fraction of full travel (default 0.15). */
  readonly deadZone?: number;
  /** Every command made, and whether it went out. */
  readonly onCommand?: (command: Command, sent: boolean) => void;
}

/**
 * Where the controls are: `off` (not the driver: no timer, nothing sent), `idle` (the driver, no
 * input: the gamepads are polled, nothing sent) or `driving` (input held: a drive command every
 * {@link COMMAND_INTERVAL_MS}).
 */
type ControlsState =
  | { readonly kind: 'off' }
  | { readonly kind: 'idle'; readonly timer: TimerHandle }
  | { readonly kind: 'driving'; readonly timer: TimerHandle };

const CONTROLS_MOVES: TransitionTable<ControlsState['kind']> = {
  off: ['idle'],
  idle: ['driving', 'off'],
  driving: ['idle', 'off'],
};

/**
 * The driver's input turned into commands at a fixed rate, with the dead-man rule: while a drive
 * key or a stick is held, a drive command every {@link COMMAND_INTERVAL_MS}; when the input is
 * released, the window loses focus or the controls are turned off, one zero drive command (sent
 * `always`) and then nothing. {@link stop} sends a stop command `always` and needs the input
 * released before driving again. Pure of the DOM: the element feeds it key events and blurs.
 */
export class DriveControls {
  readonly #options: DriveControlsOptions;
  readonly #held = new Set<string>();
  readonly #keyboardSpeed: number;
  readonly #deadZone: number;
  #state: ControlsState = { kind: 'off' };
  #seq = 0;
  /** Gamepad input counts only after the sticks were seen at rest (after a blur or a stop). */
  #gamepadArmed = true;
  /** The gamepad's stop button was down at the last poll (the stop fires on the press). */
  #stopDown = false;

  constructor(options: DriveControlsOptions) {
    this.#options = options;
    this.#keyboardSpeed = options.keyboardSpeed ?? DEFAULT_KEYBOARD_SPEED;
    this.#deadZone = options.deadZone ?? DEFAULT_DEAD_ZONE;
    // Checked now, not at the first key press.
    keyboardInput([], this.#keyboardSpeed);
    gamepadsReading([], this.#deadZone);
  }

  /** Whether the controls take input (the session drives). */
  get enabled(): boolean {
    return this.#state.kind !== 'off';
  }

  /** Whether drive commands are going out now. */
  get driving(): boolean {
    return this.#state.kind === 'driving';
  }

  /** The number the next command gets. */
  get nextSeq(): number {
    return this.#seq + 1;
  }

  /** The session drives: start polling the gamepads and taking keys. */
  enable(): void {
    if (this.#state.kind !== 'off') return;
    this.#move({
      kind: 'idle',
      timer: this.#options.clock.setInterval(() => this.#tick(), COMMAND_INTERVAL_MS),
    });
  }

  /** The session no longer drives (or is gone): a zero command if driving, then nothing. */
  disable(): void {
    if (this.#state.kind === 'driving') this.#emit(driveCommand(NEUTRAL, ++this.#seq), true);
    this.#held.clear();
    if (this.#state.kind !== 'off') this.#move({ kind: 'off' });
  }

  /**
   * A key went down. Returns whether it is a drive key (the caller then prevents its default,
   * such as scrolling). Drive keys are ignored while the controls are off.
   */
  keyDown(key: string): boolean {
    if (!isDriveKey(key)) return false;
    if (this.#state.kind === 'off') return true;
    const fresh = !this.#held.has(key);
    this.#held.add(key);
    // A new key acts at once (auto-repeat does not: the timer keeps the rate).
    if (fresh) this.#tick();
    return true;
  }

  /** A key went up: releasing the last drive key sends the zero command at once. */
  keyUp(key: string): boolean {
    if (!this.#held.delete(key)) return isDriveKey(key);
    this.#tick();
    return true;
  }

  /** The window lost focus: every key counts as released and the sticks must come back to rest. */
  release(): void {
    this.#held.clear();
    this.#gamepadArmed = false;
    if (this.#state.kind === 'driving') this.#tick();
  }

  /**
   * Sends a stop command (always, whatever the state) and treats the input as released: driving
   * resumes only after the keys and sticks were let go.
   */
  stop(): void {
    this.#held.clear();
    this.#gamepadArmed = false;
    this.#emit(stopCommand(++this.#seq), true);
    if (this.#state.kind === 'driving') this.#move({ kind: 'idle', timer: this.#state.timer });
  }

  /** Stops the timer; sends the zero command if driving. */
  close(): void {
    this.disable();
  }

  /** One command interval (or an input change): read the input, send what the rule says. */
  #tick(): void {
    const state = this.#state;
    if (state.kind === 'off') return;
    const pads = gamepadsReading(this.#options.getGamepads?.() ?? [], this.#deadZone);
    if (pads.stop && !this.#stopDown) {
      this.#stopDown = true;
      this.stop();
      return;
    }
    this.#stopDown = pads.stop;
    if (!this.#gamepadArmed && isNeutral(pads.input)) this.#gamepadArmed = true;
    const input: DriveInput = combineInputs(
      keyboardInput(this.#held, this.#keyboardSpeed),
      this.#gamepadArmed ? pads.input : NEUTRAL,
    );
    if (!isNeutral(input)) {
      this.#emit(driveCommand(input, ++this.#seq), false);
      if (state.kind === 'idle') this.#move({ kind: 'driving', timer: state.timer });
    } else if (state.kind === 'driving') {
      // The dead-man rule: one zero command, always sent, then nothing.
      this.#emit(driveCommand(NEUTRAL, ++this.#seq), true);
      this.#move({ kind: 'idle', timer: state.timer });
    }
  }

  #emit(command: Command, always: boolean): void {
    const sent = this.#options.send(command, { always });
    this.#options.onCommand?.(command, sent);
  }

  #move(next: ControlsState): void {
    const from = this.#state;
    assertTransition('DriveControls', CONTROLS_MOVES, from.kind, next.kind);
    if (next.kind === 'off' && from.kind !== 'off') this.#options.clock.clearInterval(from.timer);
    this.#state = next;
  }
}
