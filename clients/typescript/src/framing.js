// @ts-check
/**
 * The framing of skillgate's transport: 8 hex digits of the body's length in
 * bytes, a colon, the JSON body, a newline.
 * @module
 */
import { FrameError, FrameTooLargeError } from './errors.js';

/** Bytes before the body: the length digits and the colon. */
export const HEADER_LENGTH = 9;
/** The largest length 8 hex digits can declare. */
export const MAX_FRAME_BODY = 0xffffffff;
/** The gateway's default --max-message-size, used until a limit is known. */
export const DEFAULT_MAX_MESSAGE_SIZE = 1 << 20;

const COLON = 0x3a;
const NEWLINE = 0x0a;

/**
 * Frames one message. The limit applies to the UTF-8 byte length of the
 * body, which is what the peer counts: a string of 600,000 "é" is 1.2 MB.
 * @param {unknown} message a JSON-serializable message
 * @param {number} maxBody the largest body the peer accepts, in bytes
 * @returns {Buffer}
 */
export function encodeFrame(message, maxBody) {
  const json = JSON.stringify(message);
  if (typeof json !== 'string') {
    throw new TypeError('encodeFrame: the message is not JSON-serializable');
  }
  const size = Buffer.byteLength(json, 'utf8');
  if (size > Math.min(maxBody, MAX_FRAME_BODY)) {
    throw new FrameTooLargeError(size, maxBody, 'outgoing');
  }
  const frame = Buffer.allocUnsafe(HEADER_LENGTH + size + 1);
  frame.write(size.toString(16).padStart(8, '0'), 0, 'latin1');
  frame[8] = COLON;
  frame.write(json, HEADER_LENGTH, 'utf8');
  frame[HEADER_LENGTH + size] = NEWLINE;
  return frame;
}

/**
 * Parses a frame header, accepting upper- and lowercase hex digits and
 * nothing else (no sign, no spaces: parseInt would allow both).
 * @param {Buffer} header exactly HEADER_LENGTH bytes
 * @returns {number} the declared body length
 */
export function parseHeader(header) {
  let n = 0;
  for (let i = 0; i < 8; i++) {
    const d = hexValue(header[i]);
    if (d < 0) {
      throw new FrameError('bad_length', `frame header ${quoteHeader(header)} has a non-hex length`);
    }
    n = n * 16 + d;
  }
  if (header[8] !== COLON) {
    throw new FrameError('no_colon', `frame header ${quoteHeader(header)} does not end with ':'`);
  }
  return n;
}

/** @param {number} c */
function hexValue(c) {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}

/** @param {Buffer} header */
function quoteHeader(header) {
  return JSON.stringify(header.toString('latin1'));
}

/**
 * A streaming frame parser: feed it socket chunks as they arrive, however
 * they split or merge frames, and it returns the complete bodies. A body
 * is copied at most once, when it spans chunks.
 *
 * After push throws, the stream is unusable: framing errors abort the
 * connection.
 */
export class FrameParser {
  /** @param {{maxMessageSize?: number}} [options] */
  constructor(options = {}) {
    /** The largest body accepted; checked on the header, before the body arrives. */
    this.maxMessageSize = options.maxMessageSize ?? DEFAULT_MAX_MESSAGE_SIZE;
    /** @type {Buffer[]} unread data, oldest first */
    this.chunks = [];
    /** bytes held in chunks */
    this.buffered = 0;
    /** declared length of the frame whose header was read; -1 between frames */
    this.bodyLength = -1;
  }

  /**
   * Adds a chunk and returns the bodies of the frames it completed.
   * @param {Buffer} chunk
   * @returns {Buffer[]}
   * @throws {FrameError} on a malformed or over-size frame
   */
  push(chunk) {
    if (chunk.length > 0) {
      this.chunks.push(chunk);
      this.buffered += chunk.length;
    }
    /** @type {Buffer[]} */
    const bodies = [];
    for (;;) {
      if (this.bodyLength < 0 && !this.readHeader()) return bodies;
      if (this.buffered < this.bodyLength + 1) return bodies;
      const frame = this.take(this.bodyLength + 1);
      const length = this.bodyLength;
      this.bodyLength = -1;
      if (frame[length] !== NEWLINE) {
        throw new FrameError('no_newline', `frame of ${length} bytes is not followed by a newline`);
      }
      bodies.push(frame.subarray(0, length));
    }
  }

  /** Whether a frame has begun but is not complete. */
  get partial() {
    return this.buffered > 0 || this.bodyLength >= 0;
  }

  /** @returns {boolean} whether a header was read */
  readHeader() {
    if (this.buffered < HEADER_LENGTH) return false;
    const length = parseHeader(this.take(HEADER_LENGTH));
    if (length > this.maxMessageSize) {
      throw new FrameTooLargeError(length, this.maxMessageSize, 'incoming');
    }
    this.bodyLength = length;
    return true;
  }

  /**
   * Removes n buffered bytes (n <= buffered) from the front.
   * @param {number} n
   * @returns {Buffer}
   */
  take(n) {
    const first = this.chunks[0];
    if (first.length >= n) {
      this.consumeFirst(n);
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let copied = 0;
    while (copied < n) {
      const c = this.chunks[0];
      const m = Math.min(c.length, n - copied);
      c.copy(out, copied, 0, m);
      copied += m;
      this.consumeFirst(m);
    }
    return out;
  }

  /** @param {number} n bytes to drop from the first chunk */
  consumeFirst(n) {
    const first = this.chunks[0];
    if (n === first.length) {
      this.chunks.shift();
    } else {
      this.chunks[0] = first.subarray(n);
    }
    this.buffered -= n;
  }
}
