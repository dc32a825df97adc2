import type { PilotRefusalCode } from '../connection/refusal.js';
import type { OfferErrorCode } from '../signalling.js';

/**
 * Why a pilot cannot drive or watch, as the cockpit tells it:
 * - `no-access`: the person or the token may not use this robot (a missing grant, a token for
 *   another robot);
 * - `unknown-robot`: no robot by that id that this person may see;
 * - `robot-offline`: the robot is not connected to the service now (the page keeps trying);
 * - `bad-token`: the session token expired, was revoked, or is not valid;
 * - `signed-out`: the console sign-in that mints tokens is over;
 * - `no-token`: the page was opened without a token and nobody is signed in;
 * - `slot-taken`: someone else drives; this session only watches (not final);
 * - `refused`: the robot refused for another reason (its words are shown).
 */
export type RefusalCode =
  | 'no-access'
  | 'unknown-robot'
  | 'robot-offline'
  | 'bad-token'
  | 'signed-out'
  | 'no-token'
  | 'slot-taken'
  | 'refused';

/** What the cockpit shows for a refusal. */
export interface Refusal {
  readonly code: RefusalCode;
  /** What happened, one short line. */
  readonly title: string;
  /** What to do about it. */
  readonly action: string;
  /** Whether the page stops trying (everything but `robot-offline` and `slot-taken`). */
  readonly final: boolean;
  /** The service's or the robot's own words, when they said more. */
  readonly detail?: string;
}

const WORDS: Readonly<Record<RefusalCode, { title: string; action: string; final: boolean }>> = {
  'no-access': {
    title: 'You have no access to this robot.',
    action: 'Ask an admin of its organisation for a drive or observe grant, then open the page again.',
    final: true,
  },
  'unknown-robot': {
    title: 'There is no such robot.',
    action: 'Check the robot id in the link, or pick the robot again in the console.',
    final: true,
  },
  'robot-offline': {
    title: 'The robot is offline: it is not connected to the service now.',
    action:
      'Check that it is powered and on the network; this page keeps trying and connects when it is back.',
    final: false,
  },
  'bad-token': {
    title: 'The session token has expired or is not valid.',
    action: 'Get a new link (or sign in to the console again) and open the page with it.',
    final: true,
  },
  'signed-out': {
    title: 'Your sign-in is over.',
    action: 'Sign in at /console/ in this tab again, then reload this page.',
    final: true,
  },
  'no-token': {
    title: 'No session token.',
    action: 'Open this page with #robot=<id>&token=<token>, or sign in at /console/ in this tab first.',
    final: true,
  },
  'slot-taken': {
    title: 'Someone else is driving this robot: you are watching as an observer.',
    action: 'Ask the driver to hand over, or come back when they leave.',
    final: false,
  },
  refused: {
    title: 'The robot refused this session.',
    action: 'Read the reason below; get a new link or ask an admin if it persists.',
    final: true,
  },
};

/**
 * The words for `code`, with the service's or the robot's own `detail` when given; `final`
 * overrides whether the page stops trying (a connection that ended is final whatever the code).
 */
export function refusal(code: RefusalCode, detail?: string, final?: boolean): Refusal {
  const words = WORDS[code];
  return {
    code,
    ...words,
    ...(final !== undefined && { final }),
    ...(detail !== undefined && detail !== '' && { detail }),
  };
}

/** The cockpit's refusal for a connection's refusal code (`PilotConnection.refusal`). */
export function refusalCodeOfConnection(code: PilotRefusalCode): RefusalCode {
  switch (code) {
    case 'forbidden':
      return 'no-access';
    case 'unknown-robot':
      return 'unknown-robot';
    case 'robot-offline':
      return 'robot-offline';
    case 'token-refused':
      return 'bad-token';
    case 'signed-out':
      return 'signed-out';
    case 'request-refused':
    case 'robot-denied':
      return 'refused';
    case 'driver-slot-held':
      return 'slot-taken';
    default:
      return code satisfies never;
  }
}

/** The refusal an offer error means, or `undefined` for a network problem (retried quietly). */
export function refusalCodeOfOffer(code: OfferErrorCode): RefusalCode | undefined {
  switch (code) {
    case 'bad-token':
      return 'bad-token';
    case 'forbidden':
      return 'no-access';
    case 'robot-offline':
      return 'robot-offline';
    case 'unreachable':
    case 'protocol':
    case 'timeout':
      return undefined;
    default:
      return code satisfies never;
  }
}
