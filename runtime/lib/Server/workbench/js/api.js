// Calls to the server's /v1 API, with the API key kept for this browser session.

const KEY_STORAGE = "nnsc-workbench.api-key";

/// A refused or failed call: the server's OpenAI-style error body, or a network failure
/// (status 0).
export class ApiError extends Error {
  constructor(status, error) {
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.type = error.type ?? null;
    this.param = error.param ?? null;
    this.code = error.code ?? null;
  }
}

let authErrorHandler = () => {};

/// Called with the ApiError of every 401, before the call's promise rejects.
export function onAuthError(handler) {
  authErrorHandler = handler;
}

export function apiKey() {
  return sessionStorage.getItem(KEY_STORAGE) ?? "";
}

export function setApiKey(key) {
  if (key)
    sessionStorage.setItem(KEY_STORAGE, key);
  else
    sessionStorage.removeItem(KEY_STORAGE);
}

export function apiGet(path) {
  return request("GET", path).then((r) => r.json());
}

export function apiPost(path, body) {
  return request("POST", path, body).then((r) => r.json());
}

/// The body of a GET as bytes (a saves handle's safetensors file).
export function apiGetBytes(path) {
  return request("GET", path).then((r) => r.arrayBuffer());
}

async function request(method, path, body) {
  const headers = {};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const key = apiKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    throw new ApiError(0, {message: `cannot reach the server (${e.message})`});
  }
  if (response.ok) return response;
  const text = await response.text();
  let error;
  try {
    error = JSON.parse(text).error;
  } catch {
    error = undefined;
  }
  const e = new ApiError(
      response.status,
      error && typeof error === "object" ? error : {message: text || response.statusText});
  if (response.status === 401) authErrorHandler(e);
  throw e;
}
