// The API client of the viewer: fetch with the bearer token, and a
// Server-Sent Events reader over fetch (EventSource cannot send headers,
// and the token must never appear in a URL).

const tokenKey = 'flock-token';

export function token() { return sessionStorage.getItem(tokenKey) || ''; }
export function setToken(t) {
  if (t) sessionStorage.setItem(tokenKey, t); else sessionStorage.removeItem(tokenKey);
}

// Unauthorized is thrown when the server wants a (different) token.
export class Unauthorized extends Error {}

// APIError carries the server's {"error"} text and the HTTP status.
export class APIError extends Error {
  constructor(status, msg) { super(msg); this.status = status; }
}

function headers(extra) {
  const h = Object.assign({}, extra || {});
  const t = token();
  if (t) h['Authorization'] = 'Bearer ' + t;
  return h;
}

// api calls path and returns the decoded JSON answer. body, when given, is
// sent as JSON with POST.
export async function api(path, {method, body, signal} = {}) {
  const init = {method: method || (body === undefined ? 'GET' : 'POST'), headers: headers(), signal};
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  if (resp.status === 401) throw new Unauthorized('token required');
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
  if (!resp.ok) throw new APIError(resp.status, (data && data.error) || text || resp.statusText);
  return data;
}

// parseSSE yields {id, event, data} for each event of an SSE byte stream.
async function* parseSSE(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const {value, done} = await reader.read();
    if (done) return;
    buf += value.replace(/\r\n?/g, '\n');
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const ev = {id: null, event: 'message', data: []};
      for (const line of block.split('\n')) {
        if (line === '' || line.startsWith(':')) continue;
        const c = line.indexOf(':');
        const field = c < 0 ? line : line.slice(0, c);
        let v = c < 0 ? '' : line.slice(c + 1);
        if (v.startsWith(' ')) v = v.slice(1);
        if (field === 'id') ev.id = v;
        else if (field === 'event') ev.event = v;
        else if (field === 'data') ev.data.push(v);
      }
      if (ev.data.length) yield {id: ev.id, event: ev.event, data: ev.data.join('\n')};
    }
  }
}

// terminal reports whether a run status is an end (no event follows it).
export const terminal = s => ['succeeded', 'failed', 'cancelled'].includes(s);

function isFinal(ev) {
  return ev.type === 'run' && terminal(ev.status);
}

// follow streams a run's events to onEvent until the run's terminal event
// or until signal aborts. After a dropped connection it reconnects with
// Last-Event-ID, so no stored event is lost or repeated. onState gets
// 'live', 'reconnecting' or 'ended'.
export async function follow(runID, {onEvent, onState, signal, after = 0}) {
  let last = after;
  let backoff = 250;
  while (!signal.aborted) {
    try {
      const h = headers({'Accept': 'text/event-stream'});
      if (last > 0) h['Last-Event-ID'] = String(last);
      const resp = await fetch('/runs/' + encodeURIComponent(runID) + '/events', {headers: h, signal, cache: 'no-store'});
      if (resp.status === 401) throw new Unauthorized('token required');
      if (!resp.ok) throw new APIError(resp.status, await resp.text());
      onState('live');
      for await (const m of parseSSE(resp.body)) {
        backoff = 250;
        let ev;
        try { ev = JSON.parse(m.data); } catch { continue; }
        if (m.id) last = Number(m.id);
        onEvent(ev, last);
        if (isFinal(ev) && m.id) { onState('ended'); return; }
      }
      // The server ends the stream of a run that has ended once the
      // client has seen everything; otherwise this was a dropped
      // connection.
      const head = await api('/runs/' + encodeURIComponent(runID), {signal});
      if (terminal(head.status)) { onState('ended'); return; }
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof Unauthorized) throw err;
      if (err instanceof APIError && err.status === 404) throw err;
    }
    if (signal.aborted) return;
    onState('reconnecting');
    await new Promise(r => setTimeout(r, backoff));
    backoff = Math.min(backoff * 2, 5000);
  }
}
