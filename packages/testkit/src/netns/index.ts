/**
 * Network-namespace topologies for end-to-end tests: an "internet", a NAT router and a robot
 * LAN, built from namespaces and veth pairs the test creates and removes.
 *
 * @packageDocumentation
 */

export type {
  AddressesFor,
  HostAddresses,
  PilotAddresses,
  TopologyAddresses,
  TopologyOptions,
} from './addresses.js';
export type { PacketCapture } from './capture.js';
export { type CommandResult, NetnsError, type NetnsErrorCode, type RunCommandOptions } from './commands.js';
export { NAMESPACE_PREFIX, type Role as NamespaceRole } from './names.js';
export {
  decodeUdp,
  formatIpv6,
  LinkType,
  type PcapFile,
  type PcapRecord,
  readPcap,
  type UdpPacket,
  udpPacketsFromPcap,
} from './pcap.js';
export type { DnatRule, NatMode, PortForward, PortForwardRule } from './router.js';
export {
  createTopology,
  type NamespaceRef,
  type RunResult,
  type Topology,
  type TopologyFor,
  type TopologyInterfaces,
  type TopologyNamespaces,
} from './topology.js';
