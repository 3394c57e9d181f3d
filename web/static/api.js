// api.js: the HTTP calls to sluice, with its JSON errors turned into
// ApiError values the page can show. Same origin, relative URLs.

const KEY_STORE = "sluice.apiKey";

/** An HTTP error answered by sluice: {error:{code,message}} plus Retry-After. */
export class ApiError extends Error {
  constructor(status, code, message, retryAfter) {
    super(message);
    this.status = status; // 0: the network failed
    this.code = code;
    this.retryAfter = retryAfter; // seconds, or null
  }
}

let onUnauthorized = () => {};
/** Registers the callback run on any 401 (the page shows the key field). */
export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }

export function apiKey() {
  try { return sessionStorage.getItem(KEY_STORE) || ""; } catch { return ""; }
}
export function setApiKey(k) {
  try {
    if (k) sessionStorage.setItem(KEY_STORE, k); else sessionStorage.removeItem(KEY_STORE);
  } catch { /* storage disabled: the key lives as long as nothing asks again */ }
}

/** Parses a Retry-After header (delta-seconds or HTTP date) into seconds. */
export function parseRetryAfter(v) {
  if (!v) return null;
  const n = Number(v);
  if (Number.isFinite(n)) return Math.max(0, Math.ceil(n));
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : Math.max(0, Math.ceil((t - Date.now()) / 1000));
}

/** Sends a request; resolves to {data, headers} or throws ApiError. */
export async function call(method, path, body, { signal } = {}) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const key = apiKey();
  if (key) headers.Authorization = "Bearer " + key;
  let resp;
  try {
    resp = await fetch(path, {
      method, headers, signal, cache: "no-store",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new ApiError(0, "network", "sluice cannot be reached (" + (e.message || "network error") + ").", null);
  }
  let data = null;
  const text = await resp.text();
  if (text) {
    try { data = JSON.parse(text); } catch { data = null; }
  }
  if (!resp.ok) {
    const err = (data && data.error) || {};
    const ae = new ApiError(resp.status, err.code || "http_" + resp.status,
      err.message || resp.statusText || "request failed",
      parseRetryAfter(resp.headers.get("Retry-After")));
    if (resp.status === 401) onUnauthorized(ae);
    throw ae;
  }
  return { data, headers: resp.headers };
}

/** A readable sentence for an ApiError. */
export function describe(err) {
  if (!(err instanceof ApiError)) return String(err && err.message || err);
  const what = {
    overloaded: "sluice is at capacity right now",
    upstream_unavailable: "the model upstream is unavailable (circuit open)",
    upstream_error: "the model upstream failed",
    ttft_timeout: "the model did not start answering in time",
    invalid_request: "the request was refused",
    unauthorized: "an API key is required",
    not_found: "not found",
    payload_too_large: "the question is too long",
    network: "network problem",
  }[err.code] || "error " + (err.status || "");
  return `${what}: ${err.message}`;
}
