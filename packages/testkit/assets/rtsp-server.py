"""RTSP server for tests: GStreamer's GstRtspServer serving test patterns on 127.0.0.1.

Usage: /usr/bin/python3 rtsp-server.py '<json config>'

The config is {"port": int (0 = any free port), "fps": int, "width": int, "height": int,
"mounts": [{"path": "/x", "codec": "h264" | "h265" | "mjpeg"}], "user": str?, "password": str?,
"authMethods": ["basic", "digest"]?}. With a user, every mount requires it (one server mixing open
and protected mounts never sends a 401 challenge). Once listening, one JSON line
{"port": <bound port>} goes to stdout. SIGTERM or SIGINT stops the server.
"""

import ctypes
import json
import signal
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtsp", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtsp, GstRtspServer  # noqa: E402

ROLE = "tester"


def launch_line(codec, width, height, fps):
    """The pipeline of one mount: a live test pattern encoded for the codec, payloader pay0."""
    raw = (
        f"videotestsrc is-live=true pattern=ball ! "
        f"video/x-raw,format=I420,width={width},height={height},framerate={fps}/1"
    )
    if codec == "h264":
        encode = (
            f"x264enc tune=zerolatency speed-preset=ultrafast bframes=0 sliced-threads=false "
            f"key-int-max={fps} ! rtph264pay name=pay0 pt=96 config-interval=-1"
        )
    elif codec == "h265":
        encode = (
            f"x265enc tune=zerolatency speed-preset=ultrafast key-int-max={fps} "
            f'option-string="bframes=0:open-gop=0:repeat-headers=1" ! '
            f"rtph265pay name=pay0 pt=96 config-interval=-1"
        )
    elif codec == "mjpeg":
        encode = "jpegenc ! rtpjpegpay name=pay0 pt=26"
    else:
        raise ValueError(f"unknown codec {codec!r}")
    return f"( {raw} ! {encode} )"


def set_auth_methods(auth, methods):
    """Offers exactly the given methods. Both at once is a bit mask the Python binding refuses
    (the introspection data declares an enum), so that case calls the C function directly."""
    if methods == ["basic"]:
        auth.set_supported_methods(GstRtsp.RTSPAuthMethod.BASIC)
    elif methods == ["digest"]:
        auth.set_supported_methods(GstRtsp.RTSPAuthMethod.DIGEST)
    else:
        capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
        capsule_pointer.restype = ctypes.c_void_p
        capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
        library = ctypes.CDLL("libgstrtspserver-1.0.so.0")
        library.gst_rtsp_auth_set_supported_methods.argtypes = [ctypes.c_void_p, ctypes.c_int]
        library.gst_rtsp_auth_set_supported_methods(
            capsule_pointer(auth.__gpointer__, None),
            int(GstRtsp.RTSPAuthMethod.BASIC) | int(GstRtsp.RTSPAuthMethod.DIGEST),
        )


def main():
    config = json.loads(sys.argv[1])
    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(str(config.get("port", 0)))

    user = config.get("user")
    permissions = None
    if user is not None:
        password = config.get("password", "")
        token = GstRtspServer.RTSPToken()
        token.set_string(GstRtspServer.RTSP_TOKEN_MEDIA_FACTORY_ROLE, ROLE)
        auth = GstRtspServer.RTSPAuth()
        methods = config.get("authMethods", ["basic", "digest"])
        if "basic" in methods:
            auth.add_basic(GstRtspServer.RTSPAuth.make_basic(user, password), token)
        if "digest" in methods:
            auth.add_digest(user, password, token)
        set_auth_methods(auth, methods)
        server.set_auth(auth)
        permissions = GstRtspServer.RTSPPermissions()
        permissions.add_permission_for_role(ROLE, GstRtspServer.RTSP_PERM_MEDIA_FACTORY_ACCESS, True)
        permissions.add_permission_for_role(ROLE, GstRtspServer.RTSP_PERM_MEDIA_FACTORY_CONSTRUCT, True)

    fps = int(config.get("fps", 30))
    width = int(config.get("width", 320))
    height = int(config.get("height", 240))
    mount_points = server.get_mount_points()
    for mount in config["mounts"]:
        factory = GstRtspServer.RTSPMediaFactory()
        factory.set_launch(launch_line(mount["codec"], width, height, fps))
        factory.set_shared(True)
        factory.set_protocols(GstRtsp.RTSPLowerTrans.TCP | GstRtsp.RTSPLowerTrans.UDP)
        if permissions is not None:
            factory.set_permissions(permissions)
        mount_points.add_factory(mount["path"], factory)

    loop = GLib.MainLoop()
    if server.attach(None) == 0:
        print(f"cannot listen on 127.0.0.1:{config.get('port', 0)}", file=sys.stderr)
        sys.exit(2)
    for signum in (signal.SIGTERM, signal.SIGINT):
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signum, loop.quit)
    print(json.dumps({"port": server.get_bound_port()}), flush=True)
    loop.run()


if __name__ == "__main__":
    main()
