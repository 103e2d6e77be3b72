// The portal's only way to the server: the public API under /v1, signed in by the session's
// cookies (which no script here can read), with the CSRF token the server set for the page.

/** A field the server refused, and why. */
export interface FieldError {
  field: string;
  reason: string;
}

/** An RFC 9457 problem the API answered. */
export class Problem extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
    readonly errors: FieldError[] = [],
  ) {
    super(detail || title);
  }

  /** The reason given for field, if the server named it. */
  reasonFor(field: string): string | undefined {
    return this.errors.find((e) => e.field === field)?.reason;
  }
}

function cookie(name: string): string {
  for (const part of document.cookie.split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === name) return decodeURIComponent(v.join("="));
  }
  return "";
}

let signedOut: () => void = () => {};

/** onSignedOut is called when the session has ended and could not be renewed. */
export function onSignedOut(f: () => void) {
  signedOut = f;
}

async function send(method: string, path: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && method !== "HEAD") headers["X-CSRF-Token"] = cookie("barrage_csrf");
  return fetch(path, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function problem(res: Response): Promise<Problem> {
  try {
    const p = await res.json();
    return new Problem(res.status, p.title ?? res.statusText, p.detail ?? "", Array.isArray(p.errors) ? p.errors : []);
  } catch {
    return new Problem(res.status, res.statusText, "");
  }
}

let renewing: Promise<boolean> | null = null;

/** renew exchanges the session's refresh cookie for new cookies, once for every caller waiting. */
function renew(): Promise<boolean> {
  renewing ??= send("POST", "/v1/auth/session/refresh")
    .then((r) => r.ok)
    .catch(() => false)
    .finally(() => {
      renewing = null;
    });
  return renewing;
}

/** call sends a request to the API and returns its JSON answer, or throws its Problem. An
 * expired session is renewed once, transparently. */
export async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  let res = await send(method, path, body);
  if (res.status === 401 && !path.startsWith("/v1/auth/")) {
    if (await renew()) {
      res = await send(method, path, body);
    }
    if (res.status === 401) {
      signedOut();
    }
  }
  if (!res.ok) throw await problem(res);
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

// The API's shapes the portal reads (api/openapi.yaml has them all).

export interface User {
  id: string;
  email: string;
  name: string;
  role: "admin" | "user";
  disabled: boolean;
  license?: License;
  password_guessed_at?: string;
  created_at: string;
}

export interface License {
  unlimited: boolean;
  plan?: string;
  max_vus?: number;
  max_run_duration_seconds?: number;
  max_concurrent_runs?: number;
  valid_until?: string;
  expired?: boolean;
}

export interface QuotaUse {
  limit: number;
  used: number;
}

export interface MyLicense extends License {
  quotas?: Record<string, QuotaUse>;
}

export interface APIToken {
  id: string;
  name: string;
  scopes: string[];
  created_at: string;
  expires_at?: string;
  last_used_at?: string;
}

export interface Page<T> {
  items: T[];
  next_cursor?: string;
}

export interface BrowserSession {
  user: User;
  expires_in: number;
}
