/**
 * The arithmetic of RTSP's keep-alive timer (RFC 2326 §12.37): how often a session that times
 * out after a given number of seconds must be refreshed.
 */

/** Session timeout assumed when the server names none (RFC 2326 §12.37). */
export const DEFAULT_SESSION_TIMEOUT_S = 60;

/** Keep-alives are never sent more often than this, whatever the server claims. */
const MIN_KEEP_ALIVE_MS = 1000;

/** Longest session timeout honoured (a day); beyond it timers would overflow. */
const MAX_SESSION_TIMEOUT_S = 86_400;

/**
 * How long to wait between keep-alives for a session that times out after `timeoutS` seconds:
 * half the timeout, so one lost or slow keep-alive does not end the session. At least 1 s.
 */
export function keepAliveIntervalMs(timeoutS: number): number {
  const seconds =
    Number.isFinite(timeoutS) && timeoutS > 0
      ? Math.min(timeoutS, MAX_SESSION_TIMEOUT_S)
      : DEFAULT_SESSION_TIMEOUT_S;
  return Math.max(MIN_KEEP_ALIVE_MS, Math.floor((seconds * 1000) / 2));
}
