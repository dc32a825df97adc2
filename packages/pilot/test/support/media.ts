import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** One access unit (or JPEG) of a test stream, base64 so it crosses into the page cheaply. */
export interface TestFrame {
  readonly data: string;
  readonly keyframe: boolean;
}

/** The test streams, each 320x240 at 30 fps with a keyframe every 30 frames. */
export interface TestMedia {
  readonly h264: TestFrame[];
  readonly h265: TestFrame[];
  readonly mjpeg: TestFrame[];
}

const WIDTH = 320;
const HEIGHT = 240;
const GOP = 30;

/**
 * Encodes ffmpeg's `testsrc2` pattern (colourful, never black) as H.264 baseline and H.265 Annex B
 * elementary streams and as single JPEG files in a temporary directory, splits the elementary
 * streams into access units, and removes the directory.
 */
export async function makeTestMedia(frames = 60): Promise<TestMedia> {
  const dir = await mkdtemp(join(tmpdir(), 'pilot-media-'));
  try {
    const input = ['-hide_banner', '-v', 'error', '-nostdin', '-f', 'lavfi', '-i'];
    const source = `testsrc2=size=${WIDTH}x${HEIGHT}:rate=30`;
    const count = ['-frames:v', String(frames)];
    await run('ffmpeg', [
      ...input,
      source,
      ...count,
      '-c:v',
      'libx264',
      '-profile:v',
      'baseline',
      '-preset',
      'ultrafast',
      '-g',
      String(GOP),
      '-bf',
      '0',
      '-pix_fmt',
      'yuv420p',
      // Parameter sets before every keyframe, as the daemon sends them, so a pilot can join there.
      '-bsf:v',
      'dump_extra=freq=keyframe',
      '-f',
      'h264',
      join(dir, 'video.h264'),
    ]);
    await run('ffmpeg', [
      ...input,
      source,
      ...count,
      '-c:v',
      'libx265',
      '-preset',
      'ultrafast',
      '-pix_fmt',
      'yuv420p',
      '-x265-params',
      `keyint=${GOP}:min-keyint=${GOP}:bframes=0:repeat-headers=1:log-level=error`,
      '-f',
      'hevc',
      join(dir, 'video.h265'),
    ]);
    await run('ffmpeg', [
      ...input,
      source,
      ...count,
      '-c:v',
      'mjpeg',
      '-pix_fmt',
      'yuvj420p',
      '-q:v',
      '5',
      '-f',
      'image2',
      join(dir, 'frame-%03d.jpg'),
    ]);
    const jpegNames = (await readdir(dir)).filter((n) => n.endsWith('.jpg')).sort();
    const jpegs = await Promise.all(jpegNames.map((n) => readFile(join(dir, n))));
    return {
      h264: splitAccessUnits(await readFile(join(dir, 'video.h264')), 'h264').map(toTestFrame),
      h265: splitAccessUnits(await readFile(join(dir, 'video.h265')), 'h265').map(toTestFrame),
      mjpeg: jpegs.map((data) => ({ data: data.toString('base64'), keyframe: true })),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** An access unit: its bytes (start codes included) and whether it is a random access point. */
export interface AccessUnit {
  readonly data: Uint8Array;
  readonly keyframe: boolean;
}

function toTestFrame(au: AccessUnit): TestFrame {
  return { data: Buffer.from(au.data).toString('base64'), keyframe: au.keyframe };
}

/**
 * Splits an Annex B elementary stream into access units. A new unit begins at the first
 * access-unit-opening NAL unit (delimiter, parameter set, SEI) after a picture's slices, or at a
 * slice that is the first of its picture (`first_mb_in_slice == 0` in H.264,
 * `first_slice_segment_in_pic_flag` in H.265). A unit is a keyframe when it holds an H.264 IDR
 * slice or an H.265 IRAP picture (NAL types 16 to 23).
 */
export function splitAccessUnits(stream: Uint8Array, codec: 'h264' | 'h265'): AccessUnit[] {
  const units: AccessUnit[] = [];
  let unitStart = -1;
  let sawSlice = false;
  let keyframe = false;
  const close = (end: number): void => {
    if (unitStart >= 0 && sawSlice) units.push({ data: stream.slice(unitStart, end), keyframe });
  };
  for (const nal of nalUnits(stream)) {
    const header = stream[nal.payload] ?? 0;
    const next = nal.payload + 1 < nal.end ? (stream[nal.payload + 1] ?? 0) : 0;
    const afterHeader = nal.payload + 2 < nal.end ? (stream[nal.payload + 2] ?? 0) : 0;
    let slice: boolean;
    let firstSlice: boolean;
    let opensUnit: boolean;
    let random: boolean;
    if (codec === 'h264') {
      const type = header & 0x1f;
      slice = type >= 1 && type <= 5;
      firstSlice = slice && (next & 0x80) !== 0; // ue(v) first_mb_in_slice == 0 is the single bit 1
      opensUnit = (type >= 6 && type <= 9) || (type >= 14 && type <= 18);
      random = type === 5;
    } else {
      const type = (header >> 1) & 0x3f;
      slice = type <= 31;
      firstSlice = slice && (afterHeader & 0x80) !== 0;
      opensUnit =
        (type >= 32 && type <= 35) || type === 39 || (type >= 41 && type <= 44) || (type >= 48 && type <= 55);
      random = type >= 16 && type <= 23;
    }
    if (sawSlice && (opensUnit || firstSlice)) {
      close(nal.start);
      unitStart = -1;
      sawSlice = false;
      keyframe = false;
    }
    if (unitStart < 0) unitStart = nal.start;
    if (slice) sawSlice = true;
    if (random) keyframe = true;
  }
  close(stream.length);
  return units;
}

/** NAL units of an Annex B stream: where the start code begins, where the header is, where it ends. */
function* nalUnits(stream: Uint8Array): Generator<{ start: number; payload: number; end: number }> {
  const starts: { start: number; payload: number }[] = [];
  for (let i = 0; i + 2 < stream.length; i++) {
    if (stream[i] === 0 && stream[i + 1] === 0 && stream[i + 2] === 1) {
      const start = i > 0 && stream[i - 1] === 0 ? i - 1 : i;
      starts.push({ start, payload: i + 3 });
      i += 2;
    }
  }
  for (let k = 0; k < starts.length; k++) {
    const s = starts[k]!;
    yield { ...s, end: starts[k + 1]?.start ?? stream.length };
  }
}
