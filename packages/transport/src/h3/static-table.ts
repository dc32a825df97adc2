/**
 * The QPACK static table (RFC 9204 Appendix A): 99 field lines, indexed from 0, that an encoded
 * field section can name by index without any shared state.
 */
export const QPACK_STATIC_TABLE: readonly (readonly [name: string, value: string])[] = [
  [':authority', ''], // 0
  [':path', '/'],
  ['age', '0'],
  ['content-disposition', ''],
  ['content-length', '0'],
  ['cookie', ''], // 5
  ['date', ''],
  ['etag', ''],
  ['if-modified-since', ''],
  ['if-none-match', ''],
  ['last-modified', ''], // 10
  ['link', ''],
  ['location', ''],
  ['referer', ''],
  ['set-cookie', ''],
  [':method', 'CONNECT'], // 15
  [':method', 'DELETE'],
  [':method', 'GET'],
  [':method', 'HEAD'],
  [':method', 'OPTIONS'],
  [':method', 'POST'], // 20
  [':method', 'PUT'],
  [':scheme', 'http'],
  [':scheme', 'https'],
  [':status', '103'],
  [':status', '200'], // 25
  [':status', '304'],
  [':status', '404'],
  [':status', '503'],
  ['accept', '*/*'],
  ['accept', 'application/dns-message'], // 30
  ['accept-encoding', 'gzip, deflate, br'],
  ['accept-ranges', 'bytes'],
  ['access-control-allow-headers', 'cache-control'],
  ['access-control-allow-headers', 'content-type'],
  ['access-control-allow-origin', '*'], // 35
  ['cache-control', 'max-age=0'],
  ['cache-control', 'max-age=2592000'],
  ['cache-control', 'max-age=604800'],
  ['cache-control', 'no-cache'],
  ['cache-control', 'no-store'], // 40
  ['cache-control', 'public, max-age=31536000'],
  ['content-encoding', 'br'],
  ['content-encoding', 'gzip'],
  ['content-type', 'application/dns-message'],
  ['content-type', 'application/javascript'], // 45
  ['content-type', 'application/json'],
  ['content-type', 'application/x-www-form-urlencoded'],
  ['content-type', 'image/gif'],
  ['content-type', 'image/jpeg'],
  ['content-type', 'image/png'], // 50
  ['content-type', 'text/css'],
  ['content-type', 'text/html; charset=utf-8'],
  ['content-type', 'text/plain'],
  ['content-type', 'text/plain;charset=utf-8'],
  ['range', 'bytes=0-'], // 55
  ['strict-transport-security', 'max-age=31536000'],
  ['strict-transport-security', 'max-age=31536000; includesubdomains'],
  ['strict-transport-security', 'max-age=31536000; includesubdomains; preload'],
  ['vary', 'accept-encoding'],
  ['vary', 'origin'], // 60
  ['x-content-type-options', 'nosniff'],
  ['x-xss-protection', '1; mode=block'],
  [':status', '100'],
  [':status', '204'],
  [':status', '206'], // 65
  [':status', '302'],
  [':status', '400'],
  [':status', '403'],
  [':status', '421'],
  [':status', '425'], // 70
  [':status', '500'],
  ['accept-language', ''],
  ['access-control-allow-credentials', 'FALSE'],
  ['access-control-allow-credentials', 'TRUE'],
  ['access-control-allow-headers', '*'], // 75
  ['access-control-allow-methods', 'get'],
  ['access-control-allow-methods', 'get, post, options'],
  ['access-control-allow-methods', 'options'],
  ['access-control-expose-headers', 'content-length'],
  ['access-control-request-headers', 'content-type'], // 80
  ['access-control-request-method', 'get'],
  ['access-control-request-method', 'post'],
  ['alt-svc', 'clear'],
  ['authorization', ''],
  ['content-security-policy', "script-src 'none'; object-src 'none'; base-uri 'none'"], // 85
  ['early-data', '1'],
  ['expect-ct', ''],
  ['forwarded', ''],
  ['if-range', ''],
  ['origin', ''], // 90
  ['purpose', 'prefetch'],
  ['server', ''],
  ['timing-allow-origin', '*'],
  ['upgrade-insecure-requests', '1'],
  ['user-agent', ''], // 95
  ['x-forwarded-for', ''],
  ['x-frame-options', 'deny'],
  ['x-frame-options', 'sameorigin'],
];
