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
