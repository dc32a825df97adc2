/**
 * A tiny baseline JPEG scan encoder for tests: every 8×8 block is flat (DC coefficient only, AC
 * all zero), coded with the typical Huffman tables of T.81 Annex K.3, optionally with restart
 * markers. A decoder turns a flat luma block with quantised DC `d` and table entry `q` into
 * pixels of `128 + d·q/8`, so tests can predict the decoded picture exactly.
 */

/** Luminance DC codes by size category (T.81 Table K.3). */
const LUMA_DC_CODES = [
  '00',
  '010',
  '011',
  '100',
  '101',
  '110',
  '1110',
  '11110',
  '111110',
  '1111110',
  '11111110',
  '111111110',
];
/** Chrominance DC codes by size category (T.81 Table K.4). */
const CHROMA_DC_CODES = [
  '00',
  '01',
  '10',
  '110',
  '1110',
  '11110',
  '111110',
  '1111110',
  '11111110',
  '111111110',
  '1111111110',
  '11111111110',
];
/** End-of-block codes: AC symbol 0x00 in Tables K.5 (luminance) and K.6 (chrominance). */
const LUMA_EOB = '1010';
const CHROMA_EOB = '00';

/** What to encode. */
export interface FlatScanSpec {
  readonly sampling: '4:2:0' | '4:2:2';
  readonly mcusWide: number;
  readonly mcusHigh: number;
  /** MCUs between restart markers; none when undefined. */
  readonly restartInterval?: number;
  /** Quantised DC of the luma block at block column `x`, block row `y`. */
  readonly lumaDc: (x: number, y: number) => number;
  /** End the scan with EOI (FF D9), as some senders do. */
  readonly withEoi?: boolean;
}

/** The encoded scan and the picture size it covers. */
export interface FlatScan {
  readonly scan: Uint8Array;
  readonly width: number;
  readonly height: number;
}

class BitWriter {
  readonly bytes: number[] = [];
  #acc = 0;
  #bits = 0;

  write(code: string): void {
    for (const bit of code) {
      this.writeBits(bit === '1' ? 1 : 0, 1);
    }
  }

  writeBits(value: number, count: number): void {
    for (let i = count - 1; i >= 0; i--) {
      this.#acc = (this.#acc << 1) | ((value >> i) & 1);
      this.#bits++;
      if (this.#bits === 8) {
        this.bytes.push(this.#acc);
        if (this.#acc === 0xff) {
          this.bytes.push(0x00);
        }
        this.#acc = 0;
        this.#bits = 0;
      }
    }
  }

  /** Pads the last byte with 1 bits, as T.81 requires before a marker. */
  flush(): void {
    while (this.#bits !== 0) {
      this.writeBits(1, 1);
    }
  }
}

function writeDc(out: BitWriter, diff: number, codes: readonly string[]): void {
  const magnitude = Math.abs(diff);
  const size = magnitude === 0 ? 0 : Math.floor(Math.log2(magnitude)) + 1;
  out.write(codes[size]!);
  if (size > 0) {
    out.writeBits(diff >= 0 ? diff : diff + (1 << size) - 1, size);
  }
}

/** Encodes a picture of flat blocks as the scan data of a three-component interleaved scan. */
export function encodeFlatScan(spec: FlatScanSpec): FlatScan {
  const lumaRows = spec.sampling === '4:2:0' ? 2 : 1;
  const out = new BitWriter();
  let lumaPredictor = 0;
  const mcus = spec.mcusWide * spec.mcusHigh;
  for (let mcu = 0; mcu < mcus; mcu++) {
    if (spec.restartInterval !== undefined && mcu > 0 && mcu % spec.restartInterval === 0) {
      out.flush();
      out.bytes.push(0xff, 0xd0 + ((mcu / spec.restartInterval - 1) % 8));
      lumaPredictor = 0;
    }
    const mcuX = mcu % spec.mcusWide;
    const mcuY = Math.floor(mcu / spec.mcusWide);
    for (let row = 0; row < lumaRows; row++) {
      for (let column = 0; column < 2; column++) {
        const dc = spec.lumaDc(mcuX * 2 + column, mcuY * lumaRows + row);
        writeDc(out, dc - lumaPredictor, LUMA_DC_CODES);
        lumaPredictor = dc;
        out.write(LUMA_EOB);
      }
    }
    // Cb and Cr: neutral grey, a DC difference of 0 after every reset.
    for (let component = 0; component < 2; component++) {
      writeDc(out, 0, CHROMA_DC_CODES);
      out.write(CHROMA_EOB);
    }
  }
  out.flush();
  if (spec.withEoi === true) {
    out.bytes.push(0xff, 0xd9);
  }
  return {
    scan: Uint8Array.from(out.bytes),
    width: spec.mcusWide * 16,
    height: spec.mcusHigh * 8 * lumaRows,
  };
}
