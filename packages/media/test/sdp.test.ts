import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { isMediaError } from '../src/errors.js';
import { RtspMessageParser, type RtspResponse, serializeRequest } from '../src/rtsp/message.js';
import { decodeSpropParameterSets, findVideoMedia, parseSdp, resolveControlUrl } from '../src/sdp.js';
import { useCodecRtspServer } from './support/rtsp-server.js';

/** Sends one DESCRIBE over a plain socket and returns the answer: what the server really sends. */
function describeOnce(url: string, port: number): Promise<RtspResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    const parser = new RtspMessageParser();
    socket.once('error', reject);
    socket.on('data', (chunk) => {
      for (const message of parser.push(chunk)) {
        if (message.kind === 'response') {
          socket.destroy();
          socket.once('close', () => resolve(message));
        }
      }
    });
    socket.write(
      serializeRequest({
        method: 'DESCRIBE',
        uri: url,
        headers: [
          ['CSeq', '1'],
          ['Accept', 'application/sdp'],
        ],
      }),
    );
  });
}

/** Expects `fn` to throw a MediaError `malformed-sdp` whose message matches `pattern`. */
function expectMalformed(fn: () => unknown, pattern: RegExp): void {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(isMediaError(caught, 'malformed-sdp'), String(caught)).toBe(true);
  expect((caught as Error).message).toMatch(pattern);
}

/** An SDP as GStreamer 1.22's RTSP server sends it for an H.264 mount (captured from the fixture). */
const GSTREAMER_H264 = [
  'v=0',
  'o=- 16911870122323389914 1 IN IP4 127.0.0.1',
  's=Session streamed with GStreamer',
  'i=rtsp-server',
  't=0 0',
  'a=tool:GStreamer',
  'a=type:broadcast',
  'a=control:*',
  'a=range:npt=now-',
  'm=video 0 RTP/AVP 96',
  'c=IN IP4 0.0.0.0',
  'b=AS:2097',
  'a=rtpmap:96 H264/90000',
  'a=framerate:30',
  'a=fmtp:96 packetization-mode=1;sprop-parameter-sets=Z0LAFdoFB+wFqDAwNSgAAAMACAAAAwHkeLF1,aM48gA==;profile-level-id=42c015;level-asymmetry-allowed=1',
  'a=control:stream=0',
  'a=ts-refclk:local',
  'a=mediaclk:sender',
  'a=ssrc:1742440643 cname:user3042606034@host-60a21a7f',
  '',
].join('\r\n');

describe('parseSdp on golden descriptions', () => {
  it('reads the GStreamer RTSP server SDP field by field', () => {
    const sdp = parseSdp(GSTREAMER_H264);
    expect(sdp.sessionName).toBe('Session streamed with GStreamer');
    expect(sdp.control).toBe('*'); // session-level: aggregate control is the base URL
    expect(sdp.media).toHaveLength(1);
    const video = sdp.media[0]!;
    expect(video.type).toBe('video');
    expect(video.port).toBe(0);
    expect(video.proto).toBe('RTP/AVP');
    expect(video.formats).toEqual([96]);
    expect(video.payloadType).toBe(96);
    expect(video.encodingName).toBe('H264');
    expect(video.clockRate).toBe(90000);
    expect(video.control).toBe('stream=0');
    expect(video.connection).toEqual({ netType: 'IN', addrType: 'IP4', address: '0.0.0.0' });
    // fmtp keys lower-cased; values (base64 with "=" padding) kept whole.
    expect([...video.fmtp]).toEqual([
      ['packetization-mode', '1'],
      ['sprop-parameter-sets', 'Z0LAFdoFB+wFqDAwNSgAAAMACAAAAwHkeLF1,aM48gA=='],
      ['profile-level-id', '42c015'],
      ['level-asymmetry-allowed', '1'],
    ]);
    expect(video.attributes).toContainEqual(['framerate', '30']);
    expect(video.attributes).toContainEqual(['ssrc', '1742440643 cname:user3042606034@host-60a21a7f']);
  });

  it('reads an Axis-style SDP with absolute control URLs', () => {
    const sdp = parseSdp(
      [
        'v=0',
        'o=- 1234567890 1 IN IP4 192.168.0.90',
        's=Media Presentation',
        'e=NONE',
        't=0 0',
        'a=range:npt=now-',
        'a=control:rtsp://192.168.0.90/axis-media/media.amp?videocodec=h264',
        'm=video 0 RTP/AVP 96',
        'c=IN IP4 0.0.0.0',
        'b=AS:50000',
        'a=rtpmap:96 H264/90000',
        'a=fmtp:96 packetization-mode=1; profile-level-id=4d0029; sprop-parameter-sets=Z0LAFdoFB+wFqDAwNSgAAAMACAAAAwHkeLF1,aM48gA==',
        'a=control:rtsp://192.168.0.90/axis-media/media.amp/stream=0?videocodec=h264',
        'a=framerate:30.000000',
        'a=transform:1,0,0;0,1,0;0,0,1',
      ].join('\r\n'),
    );
    const base = 'rtsp://192.168.0.90/axis-media/media.amp?videocodec=h264';
    const video = findVideoMedia(sdp);
    expect(resolveControlUrl(base, sdp.control)).toBe(
      'rtsp://192.168.0.90/axis-media/media.amp?videocodec=h264',
    );
    expect(resolveControlUrl(base, video.control)).toBe(
      'rtsp://192.168.0.90/axis-media/media.amp/stream=0?videocodec=h264',
    );
    expect(video.fmtp.get('profile-level-id')).toBe('4d0029');
    expect(video.fmtp.get('packetization-mode')).toBe('1');
  });

  it('reads a Hikvision-style SDP with trackID controls and a metadata track', () => {
    const sdp = parseSdp(
      [
        'v=0',
        'o=- 1109162014219182 1109162014219192 IN IP4 192.168.1.64',
        's=Media Presentation',
        'e=NONE',
        'b=AS:5050',
        't=0 0',
        'a=control:*',
        'm=video 0 RTP/AVP 96',
        'c=IN IP4 0.0.0.0',
        'b=AS:5000',
        'a=recvonly',
        'a=x-dimensions:1920,1080',
        'a=control:trackID=1',
        'a=rtpmap:96 H265/90000',
        'a=fmtp:96 sprop-vps=QAEMAf//AWAAAAMAkAAAAwAAAwB4lZgJ; sprop-sps=QgEBAWAAAAMAkAAAAwAAAwB4oAPAgBDlllZqvK4BAAADAAEAAAMAHgg=; sprop-pps=RAHA8vA8kAA=',
        'm=application 0 RTP/AVP 107',
        'c=IN IP4 0.0.0.0',
        'b=AS:5000',
        'a=recvonly',
        'a=control:trackID=3',
        'a=rtpmap:107 isapi.metadata/90000',
        'a=Media_header:MEDIAINFO=494D4B48010300000400000100000000000000000000000000000000000000000000000000000000;',
        'a=appversion:1.0',
      ].join('\r\n'),
    );
    const base = 'rtsp://192.168.1.64:554/Streaming/Channels/101';
    expect(sdp.media.map((m) => [m.type, m.payloadType, m.encodingName])).toEqual([
      ['video', 96, 'H265'],
      ['application', 107, 'isapi.metadata'],
    ]);
    const video = findVideoMedia(sdp);
    expect(resolveControlUrl(base, sdp.control)).toBe(base);
    // Content-Base without a trailing slash gets one before the relative control.
    expect(resolveControlUrl(base, video.control)).toBe(
      'rtsp://192.168.1.64:554/Streaming/Channels/101/trackID=1',
    );
    expect(resolveControlUrl(`${base}/`, video.control)).toBe(
      'rtsp://192.168.1.64:554/Streaming/Channels/101/trackID=1',
    );
    const [vps] = decodeSpropParameterSets(video.fmtp.get('sprop-vps') ?? '');
    expect(((vps?.[0] ?? 0) >> 1) & 0x3f).toBe(32); // H.265 NAL type 32: VPS
  });

  it('fills in static payload types without rtpmap and skips audio for the video', () => {
    const sdp = parseSdp(
      [
        'v=0',
        'o=- 1 1 IN IP4 10.0.0.2',
        's=cam',
        'c=IN IP4 0.0.0.0',
        't=0 0',
        'm=audio 0 RTP/AVP 0',
        'a=control:track2',
        'm=video 0 RTP/AVP 26',
        'a=control:track1',
      ].join('\n'),
    );
    expect(sdp.media[0]).toMatchObject({
      type: 'audio',
      encodingName: 'PCMU',
      clockRate: 8000,
      control: 'track2',
    });
    expect(sdp.media[0]?.rtpmaps.get(0)).toEqual({
      payloadType: 0,
      encodingName: 'PCMU',
      clockRate: 8000,
      channels: 1,
    });
    const video = findVideoMedia(sdp);
    expect(video).toMatchObject({
      payloadType: 26,
      encodingName: 'JPEG',
      clockRate: 90000,
      control: 'track1',
    });
    // No c= in the section: the session's applies.
    expect(video.connection?.address).toBe('0.0.0.0');
    expect(video.fmtp.size).toBe(0);
  });

  it('keeps all rtpmaps and fmtps of a section and describes its first format', () => {
    const sdp = parseSdp(
      [
        'v=0',
        's=-',
        'm=video 5000/2 RTP/AVPF 97 96',
        'a=rtpmap:96 H264/90000',
        'a=rtpmap:97 H265/90000',
        'a=fmtp:96 packetization-mode=0',
        'a=fmtp:97 Profile-Id=1;flag',
        'a=rtpmap:10 L16/44100/2',
      ].join('\r\n'),
    );
    const video = sdp.media[0]!;
    expect(video.port).toBe(5000);
    expect(video.payloadType).toBe(97);
    expect(video.encodingName).toBe('H265');
    expect([...video.fmtp]).toEqual([
      ['profile-id', '1'],
      ['flag', ''],
    ]);
    expect(video.fmtps.get(96)?.get('packetization-mode')).toBe('0');
    expect(video.rtpmaps.get(10)).toEqual({
      payloadType: 10,
      encodingName: 'L16',
      clockRate: 44100,
      channels: 2,
    });
  });

  it('leaves encoding empty for a dynamic type without rtpmap, and findVideoMedia says what was offered', () => {
    const sdp = parseSdp('v=0\r\ns=-\r\nm=video 0 RTP/AVP 96\r\nm=audio 0 RTP/AVP 8\r\n');
    expect(sdp.media[0]).toMatchObject({ payloadType: 96, encodingName: '', clockRate: 0 });
    expectMalformed(
      () => findVideoMedia(sdp),
      /no usable RTP video stream \(offered: video RTP\/AVP pt 96; audio RTP\/AVP PCMA\)/,
    );
    expectMalformed(() => findVideoMedia(parseSdp('v=0\r\n')), /offered: nothing/);
  });
});

describe('parseSdp on garbage', () => {
  it.each([
    ['', /SDP is empty/],
    ['\r\n\r\n', /SDP is empty/],
    ['<html><body>401 Unauthorized</body></html>', /line 1 .*not a "<letter>=<value>" line/],
    ['v=1\r\ns=-', /line 1 .*starts with "v=0"/],
    ['s=-\r\nv=0', /line 1 .*starts with "v=0"/],
    ['v=0\r\nm=video', /line 2 .*expected "m=<media> <port> <proto> <format> \.\.\."/],
    ['v=0\r\nm=video 99999 RTP/AVP 96', /port "99999" is not 0-65535/],
    ['v=0\r\nm=video 0 RTP/AVP 96 abc', /format "abc" is not an RTP payload type/],
    ['v=0\r\nm=video 0 RTP/AVP 128', /format "128" is not an RTP payload type/],
    ['v=0\r\nm=video 0 RTP/AVP 96\r\na=rtpmap:96 H264', /line 3 .*a=rtpmap/],
    ['v=0\r\nm=video 0 RTP/AVP 96\r\na=rtpmap:200 H264/90000', /a=rtpmap/],
    ['v=0\r\nm=video 0 RTP/AVP 96\r\na=rtpmap:96 H264/0', /a=rtpmap/],
    ['v=0\r\nm=video 0 RTP/AVP 96\r\na=fmtp:x a=b', /a=fmtp/],
    ['v=0\r\nc=IN IP4', /expected "c=<nettype> <addrtype> <address>"/],
    ['v=0\r\nthis is not sdp', /line 2/],
  ])('rejects %j', (text, pattern) => {
    expectMalformed(() => parseSdp(text), pattern);
  });

  it('rejects a body too large to be a session description', () => {
    expectMalformed(() => parseSdp(`v=0\r\n${'a=x\r\n'.repeat(300_000)}`), /larger than/);
  });

  it('quotes the offending line redacted', () => {
    expectMalformed(() => parseSdp('v=0\r\nrtsp://admin:hunter2@cam/'), /rtsp:\/\/\*\*\*@cam\//);
    expect(() => parseSdp('v=0\r\nrtsp://admin:hunter2@cam/')).not.toThrow(/hunter2/);
  });
});

describe('resolveControlUrl (RFC 2326 C.1.1)', () => {
  it.each([
    ['rtsp://cam/live/', undefined, 'rtsp://cam/live/'],
    ['rtsp://cam/live/', '', 'rtsp://cam/live/'],
    ['rtsp://cam/live/', '*', 'rtsp://cam/live/'],
    ['rtsp://cam/live/', 'stream=0', 'rtsp://cam/live/stream=0'],
    ['rtsp://cam/live', 'stream=0', 'rtsp://cam/live/stream=0'],
    ['rtsp://cam:8554/live', 'trackID=1', 'rtsp://cam:8554/live/trackID=1'],
    ['rtsp://cam/live', ' trackID=1 ', 'rtsp://cam/live/trackID=1'],
    ['rtsp://cam/live', 'rtsp://other/x/trackID=0', 'rtsp://other/x/trackID=0'],
    ['rtsp://cam:554/a/b', '/c/track1', 'rtsp://cam:554/c/track1'],
    // Dahua's Content-Base ends with a slash after the query; the control is appended as text.
    [
      'rtsp://cam/cam/realmonitor?channel=1&subtype=0/',
      'trackID=0',
      'rtsp://cam/cam/realmonitor?channel=1&subtype=0/trackID=0',
    ],
  ])('base %s + control %j = %s', (base, control, expected) => {
    expect(resolveControlUrl(base, control)).toBe(expected);
  });
});

describe('decodeSpropParameterSets', () => {
  it('decodes comma-separated base64 NAL units', () => {
    const [sps, pps, ...rest] = decodeSpropParameterSets('Z0LAFdoFB+wFqDAwNSgAAAMACAAAAwHkeLF1,aM48gA==');
    expect(rest).toEqual([]);
    expect((sps?.[0] ?? 0) & 0x1f).toBe(7); // H.264 SPS
    expect(sps?.[1]).toBe(0x42); // profile_idc 66, as profile-level-id=42c015 says
    expect(pps).toEqual(new Uint8Array([0x68, 0xce, 0x3c, 0x80]));
  });

  it('accepts missing padding, spaces and empty items', () => {
    expect(decodeSpropParameterSets(' aM48gA , ,')).toEqual([new Uint8Array([0x68, 0xce, 0x3c, 0x80])]);
    expect(decodeSpropParameterSets('')).toEqual([]);
  });

  it('rejects what is not base64', () => {
    expectMalformed(() => decodeSpropParameterSets('Z0LA,@@@'), /"@@@" is not base64/);
    expectMalformed(() => decodeSpropParameterSets('abcde'), /not base64/);
  });
});

describe('parseSdp on what the GStreamer RTSP server really sends', () => {
  const server = useCodecRtspServer();

  it.each([
    ['/h264', 96, 'H264', 'sprop-parameter-sets'],
    ['/h265', 96, 'H265', 'sprop-sps'],
    ['/mjpeg', 26, 'JPEG', undefined],
  ])('%s: payload type %i, %s', async (path, payloadType, encodingName, sprop) => {
    const url = server().url(path);
    const response = await describeOnce(url, server().port);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/sdp');
    const base = response.headers.get('content-base') ?? url;
    expect(base).toBe(`${url}/`);
    const sdp = parseSdp(Buffer.from(response.body).toString('utf8'));
    const video = findVideoMedia(sdp);
    expect(video).toMatchObject({ payloadType, encodingName, clockRate: 90000, control: 'stream=0' });
    expect(resolveControlUrl(base, sdp.control)).toBe(`${url}/`);
    expect(resolveControlUrl(base, video.control)).toBe(`${url}/stream=0`);
    if (sprop !== undefined) {
      const units = decodeSpropParameterSets(video.fmtp.get(sprop) ?? '');
      expect(units.length).toBeGreaterThan(0);
    }
  });
});
