/**
 * AWS Signature Version 4 as an S3 server checks it, computed here from the spec with node:crypto
 * alone (not with the AWS SDK's signer, which is what is under test): the canonical request, the
 * string to sign, the derived key and the signature, for header authentication (`Authorization:
 * AWS4-HMAC-SHA256 ...`) and for presigned URLs (`X-Amz-Signature` in the query), with a presigned
 * URL's `X-Amz-Expires` and a request's clock skew judged as S3 judges them.
 * https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export const ALGORITHM = 'AWS4-HMAC-SHA256';
export const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';
/** S3 refuses a request signed more than 15 minutes from its own clock. */
const MAX_SKEW_MS = 15 * 60 * 1000;
/** A presigned URL lives 1 s to 7 days. */
const MAX_EXPIRES_S = 7 * 24 * 60 * 60;

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/** What the server knows of a request: the raw target as sent, the headers (lower-case names, as node gives them). */
export interface SignedRequest {
  method: string;
  /** Path and query as on the request line (still percent-encoded). */
  target: string;
  headers: Record<string, string | string[] | undefined>;
}

/** Why S3 refuses a request, as its error document says it. */
export interface Refusal {
  status: number;
  code:
    | 'AccessDenied'
    | 'InvalidAccessKeyId'
    | 'SignatureDoesNotMatch'
    | 'AuthorizationQueryParametersError'
    | 'RequestTimeTooSkewed'
    | 'NotImplemented';
  message: string;
}

export interface Verified {
  accessKeyId: string;
  /** The payload hash the signature covers: a hex sha256 the body must match, or UNSIGNED-PAYLOAD. */
  payloadHash: string;
}

/** RFC 3986 percent-encoding as SigV4 wants it: everything but A-Z a-z 0-9 - _ . ~ encoded, upper-case hex. */
export function uriEncode(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

export const sha256Hex = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');
const hmac = (key: Buffer | string, data: string): Buffer => createHmac('sha256', key).update(data).digest();

/** The key derived from the secret for one day, region and service. */
export function signingKey(secret: string, day: string, region: string, service: string): Buffer {
  return hmac(hmac(hmac(hmac(`AWS4${secret}`, day), region), service), 'aws4_request');
}

/** The query's pairs, decoded, in the order sent. */
function queryPairs(query: string): [string, string][] {
  if (query === '') return [];
  return query.split('&').map((part) => {
    const eq = part.indexOf('=');
    const decode = (s: string) => decodeURIComponent(s.replace(/\+/g, '%20'));
    return eq === -1 ? [decode(part), ''] : [decode(part.slice(0, eq)), decode(part.slice(eq + 1))];
  });
}

/** S3's canonical request: method, path encoded once, sorted query, signed headers, payload hash. */
export function canonicalRequest(
  request: SignedRequest,
  signedHeaders: string[],
  payloadHash: string,
  omitQuery: (name: string) => boolean = () => false,
): string {
  const q = request.target.indexOf('?');
  const rawPath = q === -1 ? request.target : request.target.slice(0, q);
  const rawQuery = q === -1 ? '' : request.target.slice(q + 1);
  const canonicalPath = rawPath
    .split('/')
    .map((segment) => uriEncode(decodeURIComponent(segment)))
    .join('/');
  const canonicalQuery = queryPairs(rawQuery)
    .filter(([name]) => !omitQuery(name))
    .map(([name, value]) => [uriEncode(name), uriEncode(value)] as const)
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
  const headerLines = signedHeaders.map((name) => {
    const value = request.headers[name];
    const text = Array.isArray(value) ? value.join(',') : (value ?? '');
    return `${name}:${text.trim().replace(/\s+/g, ' ')}\n`;
  });
  return [
    request.method,
    canonicalPath,
    canonicalQuery,
    headerLines.join(''),
    signedHeaders.join(';'),
    payloadHash,
  ].join('\n');
}

export function stringToSign(amzDate: string, scope: string, canonical: string): string {
  return [ALGORITHM, amzDate, scope, sha256Hex(canonical)].join('\n');
}

/** `20130524T000000Z` as milliseconds, or NaN. */
export function parseAmzDate(value: string): number {
  const m = /^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/.exec(value);
  if (m === null) return Number.NaN;
  return Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
}

interface Claimed {
  credential: string;
  signedHeaders: string;
  signature: string;
  amzDate: string;
  payloadHash: string;
  /** Seconds, presigned only. */
  expires?: number;
  presigned: boolean;
}

const header = (request: SignedRequest, name: string): string | undefined => {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/** What the request claims: from the Authorization header, or from a presigned URL's query. */
function claimed(request: SignedRequest): Claimed | Refusal {
  const query = new URLSearchParams(request.target.includes('?') ? request.target.split('?')[1] : '');
  const queryAlgorithm = query.get('X-Amz-Algorithm');
  if (queryAlgorithm !== null) {
    const credential = query.get('X-Amz-Credential');
    const signedHeaders = query.get('X-Amz-SignedHeaders');
    const signature = query.get('X-Amz-Signature');
    const amzDate = query.get('X-Amz-Date');
    const expires = Number(query.get('X-Amz-Expires'));
    if (
      queryAlgorithm !== ALGORITHM ||
      credential === null ||
      signedHeaders === null ||
      signature === null ||
      amzDate === null ||
      !Number.isInteger(expires) ||
      expires < 1 ||
      expires > MAX_EXPIRES_S
    ) {
      return {
        status: 400,
        code: 'AuthorizationQueryParametersError',
        message:
          'Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters (X-Amz-Expires 1 to 604800).',
      };
    }
    return {
      credential,
      signedHeaders,
      signature,
      amzDate,
      expires,
      payloadHash: query.get('X-Amz-Content-Sha256') ?? UNSIGNED_PAYLOAD,
      presigned: true,
    };
  }
  const authorization = header(request, 'authorization');
  if (authorization === undefined)
    return { status: 403, code: 'AccessDenied', message: 'Anonymous access is forbidden for this operation' };
  const m = /^AWS4-HMAC-SHA256 Credential=([^,]+),\s*SignedHeaders=([^,]+),\s*Signature=([0-9a-f]{64})$/.exec(
    authorization.trim(),
  );
  const amzDate = header(request, 'x-amz-date');
  const payloadHash = header(request, 'x-amz-content-sha256');
  if (m === null || amzDate === undefined || payloadHash === undefined)
    return {
      status: 400,
      code: 'AuthorizationQueryParametersError',
      message: 'Expected an AWS4-HMAC-SHA256 Authorization header with X-Amz-Date and X-Amz-Content-SHA256',
    };
  return {
    credential: m[1]!,
    signedHeaders: m[2]!,
    signature: m[3]!,
    amzDate,
    payloadHash,
    presigned: false,
  };
}

/**
 * Whether the request is signed by one of `keys` for `region`'s s3, at a time `nowMs` accepts: the
 * verified key and the payload hash its body must then match, or S3's refusal.
 */
export function verifySigV4(
  request: SignedRequest,
  keys: readonly Credentials[],
  region: string,
  nowMs: number,
): Verified | Refusal {
  const c = claimed(request);
  if ('code' in c) return c;
  const [accessKeyId, day, scopeRegion, service, terminator, ...rest] = c.credential.split('/');
  const key = keys.find((k) => k.accessKeyId === accessKeyId);
  if (key === undefined)
    return {
      status: 403,
      code: 'InvalidAccessKeyId',
      message: 'The AWS Access Key Id you provided does not exist in our records.',
    };
  const signedAt = parseAmzDate(c.amzDate);
  if (
    rest.length > 0 ||
    service !== 's3' ||
    terminator !== 'aws4_request' ||
    scopeRegion !== region ||
    Number.isNaN(signedAt) ||
    day !== c.amzDate.slice(0, 8)
  )
    return {
      status: c.presigned ? 400 : 403,
      code: c.presigned ? 'AuthorizationQueryParametersError' : 'SignatureDoesNotMatch',
      message: `Error parsing the X-Amz-Credential parameter; the scope ${c.credential.split('/').slice(1).join('/')} is not <date of X-Amz-Date>/${region}/s3/aws4_request`,
    };
  const signedHeaders = c.signedHeaders.split(';');
  if (!signedHeaders.includes('host') || signedHeaders.some((h) => header(request, h) === undefined))
    return {
      status: 403,
      code: 'AccessDenied',
      message: 'There were headers present in the request which were not signed, or signed headers that are missing',
    };
  if (c.presigned) {
    if (signedAt > nowMs + MAX_SKEW_MS)
      return { status: 403, code: 'AccessDenied', message: 'Request is not valid yet' };
    if (nowMs > signedAt + (c.expires ?? 0) * 1000)
      return { status: 403, code: 'AccessDenied', message: 'Request has expired' };
  } else if (Math.abs(nowMs - signedAt) > MAX_SKEW_MS) {
    return {
      status: 403,
      code: 'RequestTimeTooSkewed',
      message: 'The difference between the request time and the current time is too large.',
    };
  }
  const canonical = canonicalRequest(request, signedHeaders, c.payloadHash, (name) =>
    c.presigned ? name === 'X-Amz-Signature' : false,
  );
  const scope = `${day}/${region}/s3/aws4_request`;
  const expected = hmac(signingKey(key.secretAccessKey, day, region, 's3'), stringToSign(c.amzDate, scope, canonical));
  const given = Buffer.from(c.signature, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return {
      status: 403,
      code: 'SignatureDoesNotMatch',
      message:
        'The request signature we calculated does not match the signature you provided. Check your key and signing method.',
    };
  return { accessKeyId: key.accessKeyId, payloadHash: c.payloadHash };
}
