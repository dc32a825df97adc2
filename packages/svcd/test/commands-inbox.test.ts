/**
 * A session's command inbox: what reaches the command output and what is dropped and counted
 * (stale by the send time, unknown age, out of order, an observer's), on explicit times.
 */
import { captureClockFromMs, FramePacker } from '@svc/wire';
import { describe, expect, it } from 'vitest';
import { type CommandChannel, CommandInbox, type CommandInboxOptions } from '../src/command-channel.js';
import type { CommandChannelConfig } from '../src/config.js';

/** The robot's clock at the start of each test, ms (any wall-clock time). */
const T0 = 1_767_225_600_000;

function inbox(options: Partial<CommandInboxOptions> = {}) {
  const written: string[] = [];
  const config = { kind: 'command', name: 'drive', id: 3, codec: 'json' } as unknown as CommandChannelConfig;
  const channel = {
    config,
    write: (bytes: Uint8Array) => {
      written.push(new TextDecoder().decode(bytes));
      return true;
    },
  } as unknown as CommandChannel;
  let writtenCalls = 0;
  const box = new CommandInbox(channel, {
    role: 'driver',
    maxCommandAgeMs: 500,
    onWritten: () => writtenCalls++,
    ...options,
  });
  return { box, written, writtenCalls: () => writtenCalls };
}

/** A command as the pilot packs it: frame id `frameId`, send time `sentAtMs` on the robot's clock (0: none). */
function command(text: string, frameId: number, sentAtMs: number | 0): Uint8Array[] {
  const packer = new FramePacker({ channel: 3, maxDatagramBytes: 1199, firstFrameId: frameId });
  return packer.pack(
    {
      data: new TextEncoder().encode(text),
      keyframe: true,
      captureTimestampUs: 0,
      gopPosition: 0,
      captureClockUs: sentAtMs === 0 ? 0 : captureClockFromMs(sentAtMs),
      parity: { rate: 0, minPerBlock: 1 },
    },
    0,
  ).datagrams;
}

function deliver(box: CommandInbox, datagrams: Uint8Array[], nowMs: number): void {
  for (const datagram of datagrams) box.handleDatagram(datagram, nowMs);
}

describe('command inbox', () => {
  it('writes a fresh command: the message bytes alone, and tells the watchdog', () => {
    const { box, written, writtenCalls } = inbox();
    deliver(box, command('{"linear":0.5}', 10, T0 - 30), T0);
    expect(written).toEqual(['{"linear":0.5}']);
    expect(writtenCalls()).toBe(1);
    expect(box.stats).toMatchObject({ commands_sent: 1, commands_dropped_stale: 0 });
  });

  it('drops and counts a command older than max_command_age_ms, and one with no send time', () => {
    const { box, written } = inbox();
    deliver(box, command('fresh enough', 10, T0 - 500), T0);
    deliver(box, command('stale', 11, T0 + 1000 - 501), T0 + 1000);
    deliver(box, command('no clock', 12, 0), T0 + 1000);
    deliver(box, command('next', 13, T0 + 1000), T0 + 1000);
    expect(written).toEqual(['fresh enough', 'next']);
    expect(box.stats).toMatchObject({
      commands_sent: 2,
      commands_dropped_stale: 1,
      commands_dropped_unknown_age: 1,
      commands_dropped_out_of_order: 0,
    });
  });

  it('follows max_command_age_ms', () => {
    const { box, written } = inbox({ maxCommandAgeMs: 100 });
    deliver(box, command('150 ms old', 10, T0 - 150), T0);
    deliver(box, command('50 ms old', 11, T0 - 50), T0);
    expect(written).toEqual(['50 ms old']);
    expect(box.stats.commands_dropped_stale).toBe(1);
  });

  it('drops and counts a command sent before the last written one (by its send time)', () => {
    const { box, written } = inbox();
    deliver(box, command('A', 10, T0), T0);
    deliver(box, command('made before A', 11, T0 - 100), T0 + 5);
    deliver(box, command('B', 12, T0 + 10), T0 + 10);
    expect(written).toEqual(['A', 'B']);
    expect(box.stats.commands_dropped_out_of_order).toBe(1);
  });

  it('drops and counts a command whose sequence number is not newer than the last written, across the 16-bit wrap', () => {
    const { box, written } = inbox();
    deliver(box, command('65535', 0xffff, T0), T0);
    // After a second of silence the reassembler takes any id as a new sequence; the inbox does not.
    deliver(box, command('65530 again', 0xfffa, T0 + 1200), T0 + 1200);
    deliver(box, command('0', 0, T0 + 1300), T0 + 1300);
    expect(written).toEqual(['65535', '0']);
    expect(box.stats.commands_dropped_out_of_order).toBe(1);
  });

  it("drops an observer's command before anything else", () => {
    const { box, written, writtenCalls } = inbox({ role: 'observer' });
    deliver(box, command('stop', 10, T0), T0);
    expect(written).toEqual([]);
    expect(writtenCalls()).toBe(0);
    expect(box.stats).toMatchObject({ commands_dropped_observer: 1, commands_sent: 0 });
  });
});
