// @ts-check
/** The package version, sent as the client version in Initialize. */
export const VERSION = '0.1.0';
