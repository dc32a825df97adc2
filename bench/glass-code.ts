/**
 * The pixel code of the glass source (`glass-source.ts`), shared with the page that reads it back:
 * a row of {@link CODE_BLOCKS} squares of {@link BLOCK} pixels at the top left of the picture:
 * white, black (the frame of reference), 24 bits of the capture time (epoch ms modulo 2^24, most
 * significant first), 8 bits of check. Pure: runs in Node and in the page.
 */

/** Side of one code square, pixels (large enough to survive the encoder). */
export const BLOCK = 16;
/** Squares in the code row. */
export const CODE_BLOCKS = 34;
/** The capture time wraps at 2^24 ms (4.6 hours). */
export const CODE_MODULUS = 2 ** 24;

/** The check byte of a 24-bit time. */
export function glassCheck(time: number): number {
  const b0 = (time >>> 16) & 0xff;
  const b1 = (time >>> 8) & 0xff;
  const b2 = time & 0xff;
  return ((b0 + 3 * b1 + 7 * b2) & 0xff) ^ 0x5a;
}

/** The code's bits for `time` (24 bits), reference squares included. */
export function glassBits(time: number): number[] {
  const bits = [1, 0];
  for (let b = 23; b >= 0; b--) bits.push((time >>> b) & 1);
  const check = glassCheck(time);
  for (let b = 7; b >= 0; b--) bits.push((check >>> b) & 1);
  return bits;
}

/**
 * Reads the time back from the brightness at the centre of each square (`brightness(i)`, 0..255,
 * for square `i`), or `undefined` when the reference squares or the check do not match (a picture
 * without a code, or one the encoder smeared).
 */
export function readGlassCode(brightness: (square: number) => number): number | undefined {
  const white = brightness(0);
  const black = brightness(1);
  if (white - black < 64) return undefined;
  const threshold = (white + black) / 2;
  const bit = (i: number) => (brightness(i) > threshold ? 1 : 0);
  let time = 0;
  for (let i = 2; i < 26; i++) time = time * 2 + bit(i);
  let check = 0;
  for (let i = 26; i < 34; i++) check = check * 2 + bit(i);
  return check === glassCheck(time) ? time : undefined;
}

/** `later − earlier` for two times modulo {@link CODE_MODULUS}, in (−2^23, 2^23]. */
export function codeDiffMs(later: number, earlier: number): number {
  let d = (later - earlier) % CODE_MODULUS;
  if (d < 0) d += CODE_MODULUS;
  return d > CODE_MODULUS / 2 ? d - CODE_MODULUS : d;
}
