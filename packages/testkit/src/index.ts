/**
 * Node-only test tools shared by all packages.
 *
 * @packageDocumentation
 */
export {
  ChromiumSession,
  findChromium,
  type LaunchedChromium,
  launchChromium,
  type PageServing,
  type RunInChromiumOptions,
  runInChromium,
} from './chromium.js';
export {
  type CloudAnswer,
  type CloudCallOptions,
  type CloudProcess,
  type CloudProcessOptions,
  type SignedInPerson,
  startCloudProcess,
} from './cloud-process.js';
export {
  type ConsoleTab,
  callAs,
  type DevLogin,
  expectSignedIn,
  navigationLinks,
  openTab,
  pickAtLoginPage,
  signIn,
  tabTokens,
} from './console-tab.js';
export {
  type DecodeReport,
  decodeWithFfmpeg,
  ffmpegRtpSource,
  gstreamerRtpSource,
  type RtpSourceOptions,
  type RunningSource,
  type TestCodec,
} from './media-sources.js';
export {
  NAT_PMP_SERVER_PORT,
  type NatPmpResponder,
  type NatPmpResponderOptions,
  type ResponderEvent,
  type ResponderMapping,
  startNatPmpResponder,
} from './natpmp-responder.js';
export {
  type AddressesFor,
  createTopology,
  type DnatRule,
  decodeUdp,
  formatIpv6,
  type HostAddresses,
  LinkType,
  NAMESPACE_PREFIX,
  type NamespaceRef,
  type NamespaceRole,
  type NatMode,
  NetnsError,
  type NetnsErrorCode,
  type PacketCapture,
  type PcapFile,
  type PcapRecord,
  type PortForward,
  type PortForwardRule,
  type RunCommandOptions,
  type RunResult,
  readPcap,
  type Topology,
  type TopologyAddresses,
  type TopologyFor,
  type TopologyInterfaces,
  type TopologyOptions,
  type UdpPacket,
  udpPacketsFromPcap,
} from './netns/index.js';
export {
  type NetnsFleet,
  type NetnsFleetOptions,
  type NetnsRobot,
  type NetnsRobotOptions,
  startNetnsFleet,
} from './netns-fleet.js';
export {
  CookieJar,
  discover,
  type LoginAs,
  type LoginOptions,
  type LoginResult,
  type LoginTarget,
  login,
  openLoginPage,
} from './oidc-login.js';
export { closeServer, freeTcpPort, freeUdpPort, listenLocal } from './ports.js';
export {
  type PublisherEvent,
  type PublisherLayer,
  type PublisherOptions,
  type PublisherPattern,
  type RunningPublisher,
  startPublisher,
} from './publisher.js';
export {
  enrolByCli,
  type RobotConfigOptions,
  type RobotDaemon,
  type RobotDaemonOptions,
  type RobotFiles,
  runSvcd,
  type SvcdResult,
  startRobotDaemon,
  writeRobotConfig,
} from './robot-daemon.js';
export {
  type RtspServerMount,
  type RtspServerOptions,
  type RunningRtspServer,
  startRtspServer,
} from './rtsp-server.js';
export { startTcpForwarder, type TcpForwarder, type TcpForwarderOptions } from './tcp-forward.js';
export { startTurnServer, type TurnServer, type TurnServerOptions } from './turn-server.js';
