import { FakeClock } from '@svc/runtime/testing';
import { describe, expect, it } from 'vitest';
import {
  COMMAND_INTERVAL_MS,
  type Command,
  driveCommand,
  encodeCommand,
  type GamepadLike,
  gamepadReading,
  gamepadsReading,
  keyboardInput,
  stopCommand,
} from '../src/elements/command.js';
import { DriveControls } from '../src/elements/controls.js';

/** A standard-mapping pad with these axes and buttons down. */
function pad(axes: number[], pressed: number[] = [], overrides: Partial<GamepadLike> = {}): GamepadLike {
  return {
    connected: true,
    mapping: 'standard',
    axes,
    buttons: Array.from({ length: 17 }, (_, i) => ({
      pressed: pressed.includes(i),
      value: pressed.includes(i) ? 1 : 0,
    })),
    ...overrides,
  };
}

describe('the command JSON, version 1', () => {
  it('is the documented bytes: keys in order, no spaces', () => {
    expect(encodeCommand(driveCommand({ linear: 0.5, angular: -0.25 }, 7))).toBe(
      '{"v":1,"type":"drive","seq":7,"linear":0.5,"angular":-0.25}',
    );
    expect(encodeCommand(stopCommand(8))).toBe('{"v":1,"type":"stop","seq":8}');
  });

  it('clamps to [-1, 1], rounds to 3 decimals and never writes -0', () => {
    expect(driveCommand({ linear: 1.7, angular: -0.12345 }, 1)).toMatchObject({ linear: 1, angular: -0.123 });
    expect(encodeCommand(driveCommand({ linear: -0.0001, angular: -0 }, 1))).toContain(
      '"linear":0,"angular":0',
    );
  });
});

describe('keyboard mapping', () => {
  it('drives forward, back and turns with the arrows and WASD, opposite keys cancelling', () => {
    expect(keyboardInput(['ArrowUp'])).toEqual({ linear: 0.5, angular: 0 });
    expect(keyboardInput(['s'])).toEqual({ linear: -0.5, angular: 0 });
    expect(keyboardInput(['A'])).toEqual({ linear: 0, angular: 0.5 });
    expect(keyboardInput(['ArrowRight', 'w'], 1)).toEqual({ linear: 1, angular: -1 });
    expect(keyboardInput(['ArrowUp', 'ArrowDown', 'x'])).toEqual({ linear: 0, angular: 0 });
  });

  it('refuses a speed outside (0, 1]', () => {
    expect(() => keyboardInput([], 0)).toThrow(/keyboard speed must be in \(0, 1\], got 0/);
  });
});

describe('gamepad standard mapping', () => {
  it('drives with the left stick: up is forward, left is a left turn (positive)', () => {
    expect(gamepadReading(pad([-1, -1, 0, 0])).input).toEqual({ linear: 1, angular: 1 });
    expect(gamepadReading(pad([1, 1, 0, 0])).input).toEqual({ linear: -1, angular: -1 });
  });

  it('reads a stick inside the dead zone as rest and scales the travel beyond it from 0', () => {
    expect(gamepadReading(pad([0.1, -0.14, 0, 0])).input).toEqual({ linear: 0, angular: 0 });
    // Half way between the dead zone (0.15) and full travel is half speed.
    expect(gamepadReading(pad([0, -0.575, 0, 0])).input.linear).toBeCloseTo(0.5, 3);
    expect(gamepadReading(pad([0, -0.5, 0, 0]), 0).input.linear).toBe(0.5);
  });

  it('turns with the right stick when it is pushed further than the left', () => {
    expect(gamepadReading(pad([-0.3, 0, 1, 0])).input.angular).toBe(-1);
    expect(gamepadReading(pad([-1, 0, 0.5, 0])).input.angular).toBe(1);
  });

  it('stops with the east face button, and ignores pads that are not standard or not connected', () => {
    expect(gamepadReading(pad([0, 0, 0, 0], [1])).stop).toBe(true);
    expect(gamepadReading(pad([0, -1, 0, 0], [], { mapping: '' })).input).toEqual({ linear: 0, angular: 0 });
    expect(gamepadReading(pad([0, -1, 0, 0], [], { connected: false })).input).toEqual({
      linear: 0,
      angular: 0,
    });
    expect(gamepadsReading([null, pad([0, 0, 0, 0]), pad([0, -1, 0, 0])]).input).toEqual({
      linear: 1,
      angular: 0,
    });
  });

  it('refuses a dead zone outside [0, 1)', () => {
    expect(() => gamepadReading(pad([]), 1)).toThrow(/dead zone must be in \[0, 1\), got 1/);
  });
});

/** Controls on fake time, recording what they send. */
function controls(gamepads: (GamepadLike | null)[] = []) {
  const clock = new FakeClock();
  const sent: { command: Command; always: boolean }[] = [];
  const drive = new DriveControls({
    clock,
    send: (command, { always }) => {
      sent.push({ command, always });
      return true;
    },
    getGamepads: () => gamepads,
  });
  return { clock, sent, drive, gamepads };
}

describe('drive controls: fixed rate and the dead-man rule', () => {
  it('sends a drive command at once and then every interval while a key is held, then one zero command always', () => {
    const { clock, sent, drive } = controls();
    drive.enable();
    drive.keyDown('ArrowUp');
    expect(sent).toHaveLength(1);
    clock.advance(COMMAND_INTERVAL_MS * 4);
    // Auto-repeat of the held key adds nothing: the rate is the timer's.
    drive.keyDown('ArrowUp');
    expect(sent).toHaveLength(5);
    expect(sent.every((s) => s.command.type === 'drive' && s.command.linear === 0.5 && !s.always)).toBe(true);
    drive.keyUp('ArrowUp');
    expect(sent.at(-1)).toEqual({ command: driveCommand({ linear: 0, angular: 0 }, 6), always: true });
    clock.advance(COMMAND_INTERVAL_MS * 20);
    expect(sent).toHaveLength(6);
    expect(sent.map((s) => s.command.seq)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('sends nothing while off (an observer), and the zero command when turned off while driving', () => {
    const { clock, sent, drive } = controls();
    drive.keyDown('w');
    clock.advance(COMMAND_INTERVAL_MS * 5);
    expect(sent).toHaveLength(0);
    drive.enable();
    drive.keyDown('d');
    drive.disable();
    expect(sent.map((s) => [s.command.type, s.always])).toEqual([
      ['drive', false],
      ['drive', true],
    ]);
    clock.advance(COMMAND_INTERVAL_MS * 5);
    expect(sent).toHaveLength(2);
  });

  it('a blur releases every key: one zero command, then nothing', () => {
    const { clock, sent, drive } = controls();
    drive.enable();
    drive.keyDown('ArrowLeft');
    drive.release();
    expect(sent.at(-1)?.always).toBe(true);
    expect(sent.at(-1)?.command).toMatchObject({ linear: 0, angular: 0 });
    clock.advance(COMMAND_INTERVAL_MS * 10);
    expect(sent).toHaveLength(2);
  });

  it('polls the gamepad at the command rate and needs the stick at rest again after a blur', () => {
    const gamepads: (GamepadLike | null)[] = [pad([0, -1, 0, 0])];
    const { clock, sent, drive } = controls(gamepads);
    drive.enable();
    clock.advance(COMMAND_INTERVAL_MS * 3);
    expect(sent.map((s) => s.command)).toMatchObject([{ linear: 1 }, { linear: 1 }, { linear: 1 }]);
    drive.release();
    expect(sent.at(-1)).toMatchObject({ command: { linear: 0, angular: 0 }, always: true });
    clock.advance(COMMAND_INTERVAL_MS * 3);
    expect(sent).toHaveLength(4);
    gamepads[0] = pad([0, 0, 0, 0]);
    clock.advance(COMMAND_INTERVAL_MS);
    gamepads[0] = pad([0, -1, 0, 0]);
    clock.advance(COMMAND_INTERVAL_MS);
    expect(sent.at(-1)).toMatchObject({ command: { linear: 1 }, always: false });
  });

  it('the stop button sends a stop always, whatever the state, and driving resumes only after a release', () => {
    const { clock, sent, drive } = controls();
    drive.stop();
    expect(sent).toEqual([{ command: stopCommand(1), always: true }]);
    drive.enable();
    drive.keyDown('ArrowUp');
    drive.stop();
    expect(sent.at(-1)).toEqual({ command: stopCommand(3), always: true });
    clock.advance(COMMAND_INTERVAL_MS * 5);
    expect(sent).toHaveLength(3);
    drive.keyDown('ArrowUp');
    expect(sent.at(-1)?.command.type).toBe('drive');
  });

  it('the gamepad stop button stops once per press', () => {
    const gamepads: (GamepadLike | null)[] = [pad([0, 0, 0, 0], [1])];
    const { clock, sent, drive } = controls(gamepads);
    drive.enable();
    clock.advance(COMMAND_INTERVAL_MS * 5);
    expect(sent.map((s) => s.command.type)).toEqual(['stop']);
  });
});
