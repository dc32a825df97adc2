import { RTC_CHANNELS } from '@svc/wire';
import type { DataChannelInitConfig, PeerConnection } from 'node-datachannel';

/** libdatachannel's form of one of the protocol's channels (`RTC_CHANNELS` of `@svc/wire`). */
function config(spec: (typeof RTC_CHANNELS)[keyof typeof RTC_CHANNELS]): DataChannelInitConfig {
  return {
    negotiated: true,
    id: spec.id,
    ...(!spec.ordered && { unordered: true }),
    ...('maxRetransmits' in spec && { maxRetransmits: spec.maxRetransmits }),
  };
}

/**
 * `fn` made safe to hand to libdatachannel: an exception thrown in a callback that native code
 * called ends the process (`terminate`), so it is caught here and passed to `onError` (by default
 * thrown again from a fresh tick, where Node reports it with its stack like any other).
 */
export function nativeCallback<A extends unknown[]>(
  fn: (...args: A) => void,
  onError: (err: unknown) => void = (err) =>
    process.nextTick(() => {
      throw err;
    }),
): (...args: A) => void {
  return (...args) => {
    try {
      fn(...args);
    } catch (err) {
      onError(err);
    }
  };
}

/** The three channels of `pc`, created with the same ids on either side. */
export function createChannels(pc: PeerConnection) {
  const { control, datagrams, session } = RTC_CHANNELS;
  return {
    control: pc.createDataChannel(control.label, config(control)),
    datagrams: pc.createDataChannel(datagrams.label, config(datagrams)),
    session: pc.createDataChannel(session.label, config(session)),
  };
}

export type SessionChannels = ReturnType<typeof createChannels>;
