/**
 * What the daemon tells its operator about a signalling failure: the remedy for each denial, the
 * meaning of each close code, and error text fit for a log line.
 */
import { redactText } from '@svc/runtime';
import { type DenialReason, SIGNAL_CLOSE } from '@svc/wire';

/** Robot-level denials: retrying soon cannot help, an operator must act in the console. */
export const OPERATOR_DENIALS: ReadonlySet<DenialReason> = new Set([
  'unknown-robot',
  'key-mismatch',
  'robot-deleted',
]);

/** What the operator should do about a denial, as logged. */
export function remedyFor(reason: DenialReason, robotId: string, configPath?: string): string {
  switch (reason) {
    case 'unknown-robot':
      return (
        'this robot is not enrolled: create an enrolment token in the console and run ' +
        `\`svcd --config ${configPath ?? '<path>'} enrol --token <T>\`, or set SVC_ENROLMENT_TOKEN`
      );
    case 'key-mismatch':
      return `robot ${robotId} is enrolled with another key: delete the robot in the console and enrol again`;
    case 'robot-deleted':
      return `robot ${robotId} was deleted in the console: create an enrolment token and enrol again`;
    case 'bad-signature':
      return `the cloud could not verify robot ${robotId}'s signature; check the credential file, reconnecting`;
    case 'bad-token':
    case 'forbidden':
      return `the cloud refused robot ${robotId} (${reason}); reconnecting`;
    default: {
      const unknown: never = reason;
      return `the cloud denied robot ${robotId} (${String(unknown)})`;
    }
  }
}

/** A close code in words, for the log and the `backoff` state's reason. */
export function closeMeaning(code: number | undefined): string {
  switch (code) {
    case undefined:
      return 'connection lost';
    case 1000:
      return 'closed by the cloud';
    case 1001:
      return 'the cloud is shutting down';
    case 1006:
      return 'connection lost';
    case 1009:
      return 'message too large';
    case SIGNAL_CLOSE.protocolError:
      return 'protocol error';
    case SIGNAL_CLOSE.unauthenticated:
      return 'signature did not verify';
    case SIGNAL_CLOSE.denied:
      return 'denied';
    case SIGNAL_CLOSE.timeout:
      return 'timed out';
    case SIGNAL_CLOSE.replaced:
      return 'replaced by another connection of this robot';
    case SIGNAL_CLOSE.rateLimited:
      return 'over the rate limit';
    default:
      return `closed (${code})`;
  }
}

/** An error's message, redacted (a library's message may quote a URL with its credentials). */
export function describeError(err: unknown): string {
  return redactText(err instanceof Error ? err.message : String(err));
}

/** An error's class name only, for errors whose message may quote secret input. */
export function errorName(err: unknown): string {
  return err instanceof Error ? err.name : typeof err;
}
