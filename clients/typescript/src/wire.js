// @ts-check
/**
 * The receiver's checks of the transport spec: what a valid message and a
 * valid error object look like, and the errors an abort sends.
 * @module
 */

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/** The _CloseReason error of a framing or JSON failure. */
export const ERR_PARSE = { code: -32700, message: 'Parse error.' };
/** The _CloseReason error of well-formed JSON that is no valid message. */
export const ERR_INVALID = { code: -32600, message: 'Invalid request.' };

/**
 * @param {unknown} v
 * @returns {v is Record<string, any>}
 */
export function isObject(v) {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Checks an error object against the spec's receiver rules.
 * @param {unknown} error
 * @returns {string | undefined} the violation, if any
 */
export function errorProblem(error) {
  if (!isObject(error)) return 'error must be a JSON object';
  const { code, message, data } = error;
  if (!Number.isInteger(code) || code < INT32_MIN || code > INT32_MAX) return 'error.code must be a 32-bit integer';
  if (typeof message !== 'string') return 'error.message must be a string';
  if (data === undefined) return undefined;
  if (!isObject(data)) return 'error.data must be a JSON object';
  if (data.string_code !== undefined && typeof data.string_code !== 'string') return 'error.data.string_code must be a string';
  if (data.details !== undefined && typeof data.details !== 'string') return 'error.data.details must be a string';
  return undefined;
}
