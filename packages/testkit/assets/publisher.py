"""A live H.264 publisher for tests that answers publisher-control datagrams.

Usage: /usr/bin/python3 publisher.py '<json config>'

The config is {"channel": int, "answer": bool, "answerDelayMs": int, "fixedBitrate": bool, "fps": int,
"gopFrames": int,
"pattern": "ball" | "snow" | "smpte", "sourceWidth": int, "sourceHeight": int,
"layers": [{"name": str, "port": int, "width": int, "height": int, "bitrateKbps": int}]}.
One live test pattern is teed into one x264 encoder per layer, each sending RTP (payload type 96)
to 127.0.0.1:<port>. A UDP control socket on 127.0.0.1 (a free port) takes the publisher-control
datagrams of docs/protocol/publisher-control.md.

Every line on stdout is one JSON object with an "event":
  ready            {"controlPort": N}, once, when every encoder has produced its first frame;
  received         {"datagram": {...}}, every well-formed datagram, acted on or not;
  malformed        {"reason": str, "count": N}, a datagram that is not one of the four messages;
  keyframe-forced  {"channel", "layer", "cause", "kind"?}, a key unit was asked of an encoder;
  bitrate-set      {"channel", "layer", "kbps"}, an encoder's bitrate was changed;
  ignored          {"reason": str, "type": str}, a well-formed datagram that changed nothing.
Problems also go to stderr. SIGTERM, SIGINT or the end of stdin (the parent is gone) stops it.

Acting on datagrams (unless "answer" is false, which only reports them):
  recovery-request  forces a key unit on every layer's encoder, whatever the kind: the publisher
                    cannot know which layer the daemon relays at this instant, and a keyframe on
                    each is always a valid answer; after "answerDelayMs" (default 0), as an encoder
                    behind a slow link would;
  video-config      sets each encoder's bitrate to maxBitrateKbps, capped for each layer by its own
                    configured bitrate when there are several layers;
  layer             forces a key unit on the layer named by "name";
  session           is only reported.
"""

import json
import signal
import socket
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstVideo", "1.0")
from gi.repository import GLib, Gst, GstVideo  # noqa: E402

# Longest datagram accepted, as in the protocol page.
MAX_DATAGRAM_BYTES = 8 * 1024
# The elements of the pipeline and the Debian package that ships each.
ELEMENTS = {
    "videotestsrc": "gstreamer1.0-plugins-base",
    "videoscale": "gstreamer1.0-plugins-base",
    "tee": "gstreamer1.0-tools (core)",
    "queue": "gstreamer1.0-tools (core)",
    "x264enc": "gstreamer1.0-plugins-ugly",
    "rtph264pay": "gstreamer1.0-plugins-good",
    "udpsink": "gstreamer1.0-plugins-good",
}
# Highest bitrate x264enc accepts (kbit/s).
MAX_ENCODER_KBPS = 2048000


def emit(event, **fields):
    """One JSON line on stdout."""
    print(json.dumps({"event": event, **fields}), flush=True)


def warn(text):
    print(text, file=sys.stderr, flush=True)


def is_int(value, low, high):
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def is_str(value):
    return isinstance(value, str)


# The fields this publisher reads, per message type, with their checks (extra fields are
# tolerated: a publisher should keep working when a later daemon adds one).
SCHEMA = {
    "video-config": {
        "channel": lambda v: is_int(v, 1, 255),
        "maxBitrateKbps": lambda v: is_int(v, 0, 0x7FFFFFFF),
    },
    "recovery-request": {
        "channel": lambda v: is_int(v, 1, 255),
        "kind": lambda v: v in ("ltr", "intra_refresh", "idr"),
    },
    "layer": {
        "channel": lambda v: is_int(v, 1, 255),
        "layer": lambda v: is_int(v, 0, 255),
        "name": is_str,
    },
    "session": {
        "state": lambda v: v in ("started", "ended"),
        "session_id": is_str,
        "role": lambda v: v in ("driver", "observer"),
        "sessions": lambda v: is_int(v, 0, 0x7FFFFFFF),
    },
}


def check_datagram(data):
    """The message in the datagram, or raises ValueError naming what is wrong with it."""
    if len(data) > MAX_DATAGRAM_BYTES:
        raise ValueError(f"datagram of {len(data)} bytes exceeds {MAX_DATAGRAM_BYTES}")
    try:
        message = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"not UTF-8 JSON ({err})") from err
    if not isinstance(message, dict):
        raise ValueError(f"not a JSON object but {type(message).__name__}")
    kind = message.get("type")
    fields = SCHEMA.get(kind) if isinstance(kind, str) else None
    if fields is None:
        raise ValueError(f"unknown type {kind!r} (expected one of {', '.join(SCHEMA)})")
    for name, valid in fields.items():
        if name not in message:
            raise ValueError(f"{kind} without {name!r}")
        if not valid(message[name]):
            raise ValueError(f"{kind} has an invalid {name!r}: {message[name]!r}")
    return message


def build_pipeline(config):
    """The live source teed into one encoder and RTP sender per layer."""
    missing = [name for name in ELEMENTS if Gst.ElementFactory.find(name) is None]
    if missing:
        packages = sorted({ELEMENTS[name] for name in missing})
        raise RuntimeError(
            f"GStreamer element(s) {', '.join(missing)} missing: install {', '.join(packages)}"
        )
    fps = int(config["fps"])
    parts = [
        f"videotestsrc is-live=true pattern={config['pattern']} ! "
        f"video/x-raw,format=I420,width={config['sourceWidth']},height={config['sourceHeight']},"
        f"framerate={fps}/1 ! tee name=source"
    ]
    for index, layer in enumerate(config["layers"]):
        parts.append(
            f"source. ! queue max-size-buffers=2 leaky=downstream ! videoscale ! "
            f"video/x-raw,width={layer['width']},height={layer['height']} ! "
            f"x264enc name=encoder{index} tune=zerolatency speed-preset=ultrafast bframes=0 "
            f"sliced-threads=false key-int-max={config['gopFrames']} "
            f"bitrate={layer['bitrateKbps']} option-string=scenecut=0 ! "
            f"rtph264pay config-interval=-1 pt=96 mtu=1200 ! "
            f"udpsink host=127.0.0.1 port={layer['port']}"
        )
    return Gst.parse_launch(" ".join(parts))


class Publisher:
    """Runs the pipeline and answers the control socket."""

    def __init__(self, config, pipeline, control):
        self.channel = int(config["channel"])
        self.answer = bool(config["answer"])
        self.fixed_bitrate = bool(config.get("fixedBitrate", False))
        self.answer_delay_ms = int(config.get("answerDelayMs", 0))
        self.layers = config["layers"]
        self.pipeline = pipeline
        self.control = control
        self.encoders = [pipeline.get_by_name(f"encoder{i}") for i in range(len(self.layers))]
        self.malformed = 0

    def on_control(self, _fd, _condition):
        while True:
            try:
                data = self.control.recv(65536)
            except BlockingIOError:
                return True
            try:
                message = check_datagram(data)
            except ValueError as err:
                self.malformed += 1
                warn(f"publisher: malformed control datagram #{self.malformed}: {err}")
                emit("malformed", reason=str(err), count=self.malformed)
                continue
            emit("received", datagram=message)
            self.act(message)

    def act(self, message):
        kind = message["type"]
        if not self.answer:
            emit("ignored", type=kind, reason="this publisher answers nothing (answer: false)")
            return
        if kind == "session":
            emit("ignored", type=kind, reason="sessions are only reported")
            return
        if message["channel"] != self.channel:
            reason = f"channel {message['channel']} is not this publisher's ({self.channel})"
            emit("ignored", type=kind, reason=reason)
            return
        if kind == "recovery-request":
            if self.answer_delay_ms > 0:
                GLib.timeout_add(self.answer_delay_ms, self.force_every_layer, message["kind"])
            else:
                self.force_every_layer(message["kind"])
        elif kind == "layer":
            names = [layer["name"] for layer in self.layers]
            if message["name"] not in names:
                reason = f"no layer named {message['name']!r} (layers: {', '.join(names)})"
                emit("ignored", type=kind, reason=reason)
                return
            self.force_key_unit(names.index(message["name"]), "layer", None)
        elif kind == "video-config":
            if self.fixed_bitrate:
                emit("ignored", type=kind, reason="this publisher keeps its bitrate (fixedBitrate)")
                return
            self.set_bitrate(message["maxBitrateKbps"])

    def force_every_layer(self, kind):
        for index in range(len(self.layers)):
            self.force_key_unit(index, "recovery-request", kind)
        return False  # a GLib timeout runs once

    def force_key_unit(self, index, cause, kind):
        event = GstVideo.video_event_new_upstream_force_key_unit(Gst.CLOCK_TIME_NONE, True, 0)
        if not self.encoders[index].get_static_pad("src").send_event(event):
            name = self.layers[index]["name"]
            warn(f"publisher: the encoder of layer {name!r} refused the key unit request")
            return
        fields = {"kind": kind} if kind is not None else {}
        layer = self.layers[index]["name"]
        emit("keyframe-forced", channel=self.channel, layer=layer, cause=cause, **fields)

    def set_bitrate(self, kbps):
        if kbps < 1:
            reason = f"maxBitrateKbps {kbps} is not an encoder bitrate"
            emit("ignored", type="video-config", reason=reason)
            return
        for index, layer in enumerate(self.layers):
            target = min(kbps, MAX_ENCODER_KBPS)
            if len(self.layers) > 1:
                target = min(target, int(layer["bitrateKbps"]))
            self.encoders[index].set_property("bitrate", target)
            emit("bitrate-set", channel=self.channel, layer=layer["name"], kbps=target)


def main():
    config = json.loads(sys.argv[1])
    Gst.init(None)
    try:
        pipeline = build_pipeline(config)
    except (RuntimeError, GLib.Error) as err:
        warn(f"publisher: cannot build the pipeline: {err}")
        sys.exit(2)

    control = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    control.bind(("127.0.0.1", 0))
    control.setblocking(False)
    publisher = Publisher(config, pipeline, control)
    loop = GLib.MainLoop()
    failure = []

    def on_bus(_bus, message):
        if message.type == Gst.MessageType.ERROR:
            err, debug = message.parse_error()
            source = message.src.get_name()
            warn(f"publisher: pipeline error from {source}: {err.message} ({debug})")
            failure.append(err.message)
            loop.quit()
        return True

    def on_stdin(_fd, _condition):
        if sys.stdin.buffer.raw.read(4096):
            return True
        loop.quit()
        return False

    bus = pipeline.get_bus()
    bus.add_signal_watch()
    bus.connect("message", on_bus)
    GLib.io_add_watch(control.fileno(), GLib.PRIORITY_DEFAULT, GLib.IO_IN, publisher.on_control)
    GLib.io_add_watch(sys.stdin.fileno(), GLib.PRIORITY_DEFAULT, GLib.IO_IN | GLib.IO_HUP, on_stdin)
    for signum in (signal.SIGTERM, signal.SIGINT):
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signum, loop.quit)

    # Ready once every encoder has produced its first frame: a pipeline that cannot negotiate
    # fails before "ready", so the caller's start rejects with the error.
    waiting = set(range(len(publisher.encoders)))

    def on_first_frame(index):
        waiting.discard(index)
        if not waiting and not failure:
            emit("ready", controlPort=control.getsockname()[1])
        return False

    def probe(index):
        def on_buffer(_pad, _info):
            GLib.idle_add(on_first_frame, index)
            return Gst.PadProbeReturn.REMOVE

        return on_buffer

    for index, encoder in enumerate(publisher.encoders):
        encoder.get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, probe(index))

    if pipeline.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
        warn("publisher: the pipeline refused to start playing")
        pipeline.set_state(Gst.State.NULL)
        sys.exit(2)
    loop.run()
    pipeline.set_state(Gst.State.NULL)
    control.close()
    sys.exit(1 if failure else 0)


if __name__ == "__main__":
    main()
