// @ts-check
/**
 * A client for skillgate's framed JSON-RPC transport (TCP or TLS) for
 * Node.js, with no dependencies beyond Node itself.
 * @module
 */
export { Client, connect, PROTOCOL_VERSION } from './client.js';
export { Connection } from './connection.js';
export { encodeFrame, parseHeader, FrameParser, HEADER_LENGTH, MAX_FRAME_BODY, DEFAULT_MAX_MESSAGE_SIZE } from './framing.js';
export {
  SkillgateError,
  RpcError,
  CloseReasonError,
  ConnectionClosedError,
  ConnectError,
  FrameError,
  FrameTooLargeError,
  CallTimeoutError,
  TransferError,
  stringCodeFor,
} from './errors.js';
export { PIECE_BYTES } from './transfer.js';
export { VERSION } from './version.js';
