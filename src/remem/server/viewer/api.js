// Talking to the daemon: JSON calls (cookie session + the X-Remem-Request header) and one
// shared Server-Sent Events stream for job progress.

export class ApiError extends Error {
  constructor(status, detail) {
    super(detail || `HTTP ${status}`);
    this.status = status;
  }
}

export async function api(path, { method = 'GET', body, raw = false, contentType } = {}) {
  const headers = { 'X-Remem-Request': '1', Accept: 'application/json' };
  let payload;
  if (body !== undefined) {
    if (body instanceof Blob) {
      payload = body;
      headers['Content-Type'] = contentType || 'application/octet-stream';
    } else {
      payload = JSON.stringify(body);
      headers['Content-Type'] = 'application/json';
    }
  }
  let resp;
  try {
    resp = await fetch('/api/v1' + path, { method, headers, body: payload, credentials: 'same-origin' });
  } catch (e) {
    throw new ApiError(0, 'offline');
  }
  if (resp.status === 401 && !path.startsWith('/auth/')) {
    location.href = '/login';
    throw new ApiError(401, 'login required');
  }
  if (raw) return resp;
  let data = null;
  try { data = await resp.json(); } catch (e) { data = null; }
  if (!resp.ok) {
    let detail = data && data.detail;
    if (Array.isArray(detail)) detail = detail.map((d) => d.msg || JSON.stringify(d)).join('; ');
    throw new ApiError(resp.status, detail || resp.statusText);
  }
  return data;
}

// ---- live events --------------------------------------------------------------------------
const listeners = new Set();
let source = null;
let connected = false;
const jobs = new Map();

export function onEvent(fn) {
  listeners.add(fn);
  connect();
  return () => listeners.delete(fn);
}

export function knownJobs() {
  return [...jobs.values()];
}

export function isConnected() {
  return connected;
}

function emit(type, data) {
  for (const fn of [...listeners]) {
    try { fn(type, data); } catch (e) { console.error(e); }
  }
}

export function connect() {
  if (source) return;
  source = new EventSource('/api/v1/events');
  source.addEventListener('open', () => { connected = true; emit('connection', { connected: true }); });
  source.addEventListener('error', () => { connected = false; emit('connection', { connected: false }); });
  source.addEventListener('hello', (ev) => {
    const data = JSON.parse(ev.data);
    for (const j of data.jobs || []) jobs.set(j.id, j);
    emit('hello', data);
  });
  source.addEventListener('job', (ev) => {
    const job = JSON.parse(ev.data);
    jobs.set(job.id, job);
    emit('job', job);
  });
  source.addEventListener('cleared', (ev) => emit('cleared', JSON.parse(ev.data)));
  source.addEventListener('privacy', (ev) => emit('privacy', JSON.parse(ev.data)));
}
