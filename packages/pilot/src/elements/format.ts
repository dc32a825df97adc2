/** Pure text formatting for the cockpit's HUD and panels (no DOM). */

/** A dash for a value not known yet. */
export const UNKNOWN = '–';

/** `1.2 Mbit/s`, `640 kbit/s`; {@link UNKNOWN} when not a finite number. */
export function formatBitrate(bps: number | undefined): string {
  if (bps === undefined || !Number.isFinite(bps)) return UNKNOWN;
  if (bps >= 1_000_000) return `${(bps / 1_000_000).toFixed(1)} Mbit/s`;
  return `${Math.round(bps / 1000)} kbit/s`;
}

/** `85 ms` below 10 s, `12.3 s` above; {@link UNKNOWN} when not a finite number. */
export function formatMs(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return UNKNOWN;
  if (Math.abs(ms) < 10_000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(1)} s`;
}

/** `2.5 %`; {@link UNKNOWN} when not a finite number. */
export function formatPercent(fraction: number | undefined): string {
  if (fraction === undefined || !Number.isFinite(fraction)) return UNKNOWN;
  return `${(fraction * 100).toFixed(1)} %`;
}

/** `29.8 fps`. */
export function formatRate(perSecond: number | undefined, unit: string): string {
  if (perSecond === undefined || !Number.isFinite(perSecond)) return UNKNOWN;
  return `${perSecond.toFixed(1)} ${unit}`;
}

/** How a sensor message is shown: pretty JSON, text, or a hex dump. */
export interface FormattedPayload {
  readonly kind: 'json' | 'hex';
  readonly text: string;
}

/** Bytes shown in a hex dump at most; longer payloads end with a count of the rest. */
export const MAX_HEX_BYTES = 256;

/**
 * A sensor payload for people: JSON (an object or an array in UTF-8) pretty-printed with two
 * spaces, anything else as hex, 16 bytes a line.
 */
export function formatPayload(bytes: Uint8Array): FormattedPayload {
  const json = parseJson(bytes);
  if (json !== undefined) return { kind: 'json', text: JSON.stringify(json, null, 2) };
  return { kind: 'hex', text: hexDump(bytes) };
}

/** `0a ff 10 …`, 16 bytes a line, at most {@link MAX_HEX_BYTES} bytes. */
export function hexDump(bytes: Uint8Array): string {
  const shown = bytes.subarray(0, MAX_HEX_BYTES);
  const lines: string[] = [];
  for (let at = 0; at < shown.length; at += 16) {
    lines.push(Array.from(shown.subarray(at, at + 16), (b) => b.toString(16).padStart(2, '0')).join(' '));
  }
  if (bytes.length > shown.length) lines.push(`… ${bytes.length - shown.length} more bytes`);
  return lines.length === 0 ? '(empty)' : lines.join('\n');
}

function parseJson(bytes: Uint8Array): unknown {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
  const trimmed = text.trim();
  if (!trimmed.startsWith('{') && !trimmed.startsWith('[')) return undefined;
  try {
    return JSON.parse(trimmed) as unknown;
  } catch {
    return undefined;
  }
}
