import { TransportError } from '../errors.js';

/**
 * Decoder for the static Huffman code of HPACK (RFC 7541 Appendix B), which QPACK reuses for string
 * literals (RFC 9204 §4.1.2).
 *
 * The code is canonical: codes of one length are consecutive, in symbol order, and each length
 * continues where the previous one ended. So the code is fully described by one bit length per
 * symbol (0..255 and EOS = 256), which is all this module stores. The codes themselves are
 * rebuilt from the lengths when the module loads; the tests compare them against the RFC's table.
 */
// biome-ignore format: one row of 16 symbols per line reads like the RFC table
export const HUFFMAN_CODE_LENGTHS: Readonly<Uint8Array> = Uint8Array.of(
  // 0x00 .. 0x0f: control characters
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28,
  // 0x10 .. 0x1f
  28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
  // 0x20 .. 0x2f: space ! " # $ % & ' ( ) * + , - . /
  6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6,
  // 0x30 .. 0x3f: 0 .. 9 : ; < = > ?
  5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
  // 0x40 .. 0x4f: @ A .. O
  13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
  // 0x50 .. 0x5f: P .. Z [ \ ] ^ _
  7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
  // 0x60 .. 0x6f: ` a .. o
  15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5,
  // 0x70 .. 0x7f: p .. z { | } ~ DEL
  6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
  // 0x80 .. 0xff
  20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,
  24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
  22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,
  21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,
  19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
  20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,
  26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
  // EOS
  30,
);

/** The symbol that ends the code space; it must never appear inside a string. */
export const HUFFMAN_EOS = 256;

/**
 * The canonical codes, rebuilt from {@link HUFFMAN_CODE_LENGTHS}: `codes[symbol]` holds the code
 * right-aligned (its low `length` bits).
 */
export const HUFFMAN_CODES: Readonly<Uint32Array> = buildCanonicalCodes(HUFFMAN_CODE_LENGTHS);

function buildCanonicalCodes(lengths: Readonly<Uint8Array>): Uint32Array {
  const symbols = Array.from(lengths.keys()).sort((a, b) => lengths[a]! - lengths[b]! || a - b);
  const codes = new Uint32Array(lengths.length);
  let code = 0;
  let previousLength = lengths[symbols[0]!]!;
  for (const symbol of symbols) {
    const length = lengths[symbol]!;
    code *= 2 ** (length - previousLength);
    codes[symbol] = code;
    code += 1;
    previousLength = length;
  }
  return codes;
}

// The decoder is a finite-state machine that eats 4 bits at a time. Its states are the 256 inner
// nodes of the code tree (state 0 is the root: nothing pending). For each state and each nibble, a
// precomputed entry gives the next state and the symbol completed on the way, if any. The shortest
// code is 5 bits, so at most one symbol completes per nibble.
const EMIT = 1 << 16;
const FAIL = 1 << 17;

const { transitions, accepting } = buildDecoder(HUFFMAN_CODE_LENGTHS, HUFFMAN_CODES);

function buildDecoder(
  lengths: Readonly<Uint8Array>,
  codes: Readonly<Uint32Array>,
): { transitions: Uint32Array; accepting: Uint8Array } {
  // children[2 * node + bit]: an inner node index (> 0), or -(symbol + 1) for a leaf, 0 when unset.
  const children = new Int32Array(2 * 256);
  const depth = new Uint8Array(256);
  const allOnes = new Uint8Array(256);
  allOnes[0] = 1;
  let nodes = 1;
  for (let symbol = 0; symbol < lengths.length; symbol++) {
    const length = lengths[symbol]!;
    const code = codes[symbol]!;
    let node = 0;
    for (let i = length - 1; i >= 0; i--) {
      const bit = Math.floor(code / 2 ** i) & 1;
      const slot = 2 * node + bit;
      if (i === 0) {
        children[slot] = -(symbol + 1);
        break;
      }
      if (children[slot] === 0) {
        const created = nodes++;
        children[slot] = created;
        depth[created] = depth[node]! + 1;
        allOnes[created] = allOnes[node]! & bit;
      }
      node = children[slot]!;
    }
  }

  const transitions = new Uint32Array(256 * 16);
  for (let state = 0; state < 256; state++) {
    for (let nibble = 0; nibble < 16; nibble++) {
      let node = state;
      let entry = 0;
      for (let bit = 3; bit >= 0; bit--) {
        const child = children[2 * node + ((nibble >> bit) & 1)]!;
        if (child >= 0) {
          node = child;
          continue;
        }
        const symbol = -child - 1;
        if (symbol === HUFFMAN_EOS) {
          entry |= FAIL;
          break;
        }
        entry |= EMIT | (symbol << 8);
        node = 0;
      }
      transitions[state * 16 + nibble] = entry | node;
    }
  }

  // A string may end inside a code only on padding: at most 7 bits, all ones (the start of EOS).
  const accepting = new Uint8Array(256);
  for (let node = 0; node < 256; node++) {
    accepting[node] = allOnes[node] === 1 && depth[node]! <= 7 ? 1 : 0;
  }
  return { transitions, accepting };
}

/**
 * Decodes a Huffman-coded string literal. Throws {@link TransportError} `qpack-error` when the
 * input holds the EOS symbol, ends on padding longer than 7 bits or not made of ones (RFC 7541
 * §5.2), or decodes to more than `maxLength` bytes.
 */
export function huffmanDecode(encoded: Uint8Array, maxLength: number): Uint8Array {
  // Every symbol takes at least 5 bits, so the output never exceeds 8/5 of the input.
  const out = new Uint8Array(Math.min(Math.floor((encoded.length * 8) / 5), maxLength));
  let written = 0;
  let state = 0;
  for (let i = 0; i < encoded.length; i++) {
    const byte = encoded[i]!;
    for (let shift = 4; shift >= 0; shift -= 4) {
      const entry = transitions[state * 16 + ((byte >> shift) & 0x0f)]!;
      if ((entry & FAIL) !== 0) {
        throw new TransportError('qpack-error', 'Huffman-coded string contains the EOS symbol');
      }
      if ((entry & EMIT) !== 0) {
        if (written === out.length) {
          throw new TransportError(
            'qpack-error',
            `Huffman-coded string decodes to more than ${maxLength} bytes`,
          );
        }
        out[written++] = (entry >> 8) & 0xff;
      }
      state = entry & 0xff;
    }
  }
  if (accepting[state] !== 1) {
    throw new TransportError(
      'qpack-error',
      'Huffman-coded string ends in padding that is longer than 7 bits or not all ones',
    );
  }
  return out.subarray(0, written);
}
