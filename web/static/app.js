// app.js: the sluice browser page. Vanilla ES modules, no build step.
//
// Transport choice: POST /v1/tasks, then an EventSource on events_url
// (rather than POST /v1/stream read with fetch streaming), because
//  - reconnection is the browser's own: after a dropped connection
//    EventSource retries and sends Last-Event-ID, and sluice resumes after
//    that delta (no delta repeated or lost) with no client code;
//  - the task id is known before the first byte streams, so it goes into
//    the address (?task=ID) at once and a reload or another tab re-attaches
//    to the same task with the very same code path;
//  - overload (503 + Retry-After) comes back as a plain JSON answer to the
//    POST, before any stream exists;
//  - with auth on, EventSource cannot send headers, but events_url then
//    carries a token for that one task.
// EventSource also reconnects after the server *ends* a stream normally, so
// the page close()s it on the terminal event (done, partial or error).
// sluice's terminal "error" event shares its name with EventSource's own
// connection "error" event: a MessageEvent with data is sluice's, a plain
// Event is the connection's.

import { call, describe, ApiError, apiKey, setApiKey, setUnauthorizedHandler } from "./api.js";
import { $, h, ms, cacheLabel } from "./dom.js";
import { initBudget, refreshBudget, lastBudget } from "./budget.js";
import { initInspector, inspect } from "./inspector.js";

const FINAL = new Set(["done", "partial", "failed", "cancelled"]);
const NS_RE = /^[A-Za-z0-9._-]{1,64}$/;
const RECENT_KEY = "sluice.recent";

const el = {
  form: $("ask-form"), prompt: $("prompt"), ns: $("namespace"), nocache: $("nocache"),
  send: $("send"), stop: $("stop"), taskId: $("task-id"), copyId: $("copy-id"),
  status: $("status"), cache: $("cache-status"), ttft: $("ttft"), elapsed: $("elapsed"),
  chunks: $("chunks"), why: $("why"), answer: $("answer"), conn: $("conn"),
  notice: $("notice"), noticeText: $("notice-text"), noticeContinue: $("notice-continue"),
  error: $("error"), errorText: $("error-text"), retry: $("retry"),
  attachForm: $("attach-form"), attachId: $("attach-id"), recent: $("recent"),
  authCard: $("auth-card"), authForm: $("auth-form"), authKey: $("api-key"), authMsg: $("auth-msg"),
};

/** The task the page follows now; handlers of older sessions do nothing. */
let cur = null;
/** The last request body sent, for the Retry buttons. */
let lastBody = null;
/** The question of the task shown (for Continue), when known. */
let lastQuestion = "";

/** The follow-up turn of a Continue request. */
const CONTINUE_TURN = "Continue exactly where your answer above stops. Do not repeat any of it.";
let retryTick = null;
/** What to run again once an API key is entered after a 401. */
let afterKey = null;

// ---------------------------------------------------------------- view

function setStatus(word) {
  el.status.textContent = word;
  el.status.className = "pill st-" + word.replace(/[^a-z]/g, "");
  if (el.send.disabled) el.send.textContent = busyLabel(word);
}

/** The Send button's label while a task is on: what it is doing. */
function busyLabel(status) {
  return { sending: "Sending…", loading: "Loading…", queued: "Waiting for a slot…" }[status] || "Streaming…";
}

function setCache(c) {
  el.cache.textContent = cacheLabel(c);
  el.cache.className = "pill cache-" + (c && c.status ? c.status : "none");
  el.cache.title = c && c.namespace ? "effective namespace: " + c.namespace : "";
}

function setConn(text, kind) {
  el.conn.textContent = text;
  el.conn.className = "conn" + (kind ? " conn-" + kind : "");
}

function resetView() {
  el.answer.replaceChildren();
  placeholder("The answer streams in here.");
  el.answer.classList.remove("cut");
  el.taskId.textContent = "—";
  el.copyId.hidden = true;
  setStatus("idle");
  setCache(null);
  el.ttft.textContent = "—";
  el.elapsed.textContent = "—";
  el.chunks.textContent = "0";
  el.why.textContent = "";
  el.notice.hidden = true;
  hideError();
  setConn("");
}

/** The answer box's placeholder (CSS-drawn, so never part of its text). */
function placeholder(text) {
  if (text) el.answer.dataset.empty = text;
  else delete el.answer.dataset.empty;
}

function hideError() {
  el.error.hidden = true;
  clearInterval(retryTick);
  retryTick = null;
}

/**
 * Shows a readable error. retry: a function for the Retry button (or null);
 * retryAfter: seconds the button stays disabled, counting down.
 */
function showError(text, retry, retryAfter) {
  el.errorText.textContent = text;
  el.error.hidden = false;
  clearInterval(retryTick);
  el.retry.hidden = !retry;
  el.retry.onclick = retry ? () => { hideError(); retry(); } : null;
  if (!retry) return;
  let left = Math.ceil(retryAfter || 0);
  const paint = () => {
    if (left > 0) {
      el.retry.disabled = true;
      el.retry.textContent = `Retry in ${left} s`;
    } else {
      el.retry.disabled = false;
      el.retry.textContent = "Retry now";
      clearInterval(retryTick);
      retryTick = null;
    }
  };
  paint();
  if (left > 0) {
    retryTick = setInterval(() => { left--; paint(); }, 1000);
  }
}

function setBusy(busy) {
  el.send.disabled = busy;
  el.send.textContent = busy ? busyLabel(el.status.textContent) : "Send";
  el.stop.hidden = !busy;
  el.answer.setAttribute("aria-busy", busy ? "true" : "false");
}

/** The one-sentence "why was it fast or slow". */
function explain(s) {
  const c = s.cache || {};
  const parts = [];
  if (!s.final && el.status.textContent === "queued") {
    // Nothing is answering yet: say what it waits for.
    const b = lastBudget();
    parts.push(b
      ? `Waiting for an upstream slot: ${b.in_flight} of ${b.limit} are in use and ${b.queued} task${b.queued === 1 ? " is" : "s are"} queued (this one included). It starts when a slot frees up.`
      : "Waiting for an upstream slot: every slot is in use. It starts when one frees up.");
    el.why.textContent = parts.join(" ");
    return;
  }
  if (c.status === "hit") {
    parts.push(c.kind === "semantic"
      ? `Served from the cache: a similar earlier question matched (similarity ${Number(c.score).toFixed(3)}), so the model was not called.`
      : "Served from the cache: the same question was answered before, so the model was not called.");
  } else if (c.status === "bypass") {
    parts.push(`No cache (as asked): the model ${s.final ? "answered" : "is answering"} fresh and nothing is stored.`);
  } else if (c.status === "miss") {
    parts.push(`Not in the cache: the model ${s.final ? "answered" : "is answering"}` + (s.upstream ? ` (upstream ${s.upstream})` : "") + ".");
  }
  if (s.wasQueued) parts.push(s.final ? "It waited in the queue for an upstream slot first." : "It waited in the queue for an upstream slot before starting.");
  if (s.ttftMs != null && c.status !== "hit") {
    parts.push(`First token after ${ms(s.ttftMs)}` + (s.ttftMs > 1500 ? " (slow start: the model took long to begin)." : "."));
  }
  if (s.final && s.totalMs != null) {
    parts.push(`${s.chunks} chunk${s.chunks === 1 ? "" : "s"} in ${ms(s.totalMs)}.`);
  }
  const reasons = {
    deadline: "It was cut at the total time cap.",
    idle_timeout: "It was cut: the model paused longer than the idle timeout.",
    ttft_timeout: "The model did not start answering in time.",
    upstream_error: "The upstream failed mid-answer.",
    length: "It stopped at the token limit.",
    cancelled: "It was cancelled.",
  };
  if (s.finishReason && reasons[s.finishReason]) parts.push(reasons[s.finishReason]);
  el.why.textContent = parts.join(" ");
}

// ---------------------------------------------------------------- tasks

function stopFollowing() {
  if (!cur) return;
  if (cur.es) cur.es.close();
  clearInterval(cur.timer);
  clearTimeout(cur.poll);
  cur = null;
  setBusy(false);
}

/**
 * Asks a question: POST /v1/tasks, then follows its events. opts.before:
 * the text a continuation follows (kept in the answer box); opts.question:
 * the question a continuation is about.
 */
async function ask(body, opts = {}) {
  stopFollowing();
  resetView();
  lastBody = body;
  lastQuestion = opts.question || body.prompt || "";
  el.send.disabled = true;
  setStatus("sending");
  const t0 = Date.now();
  let data;
  try {
    ({ data } = await call("POST", "/v1/tasks", body));
  } catch (err) {
    el.send.disabled = false;
    el.send.textContent = "Send";
    const retryable = err instanceof ApiError && (err.status === 503 || err.status === 502 || err.status === 0 || err.status === 504);
    if (err.status === 401) {
      setStatus("idle");
      needKey(() => ask(body, opts));
      return;
    }
    setStatus(err.status === 503 ? "refused" : "error");
    if (err.status === 503) refreshBudget(); // show the full budget that refused it
    // The Retry button counts the Retry-After down: the text does not
    // repeat it.
    showError(refusalText(err), retryable ? () => ask(body, opts) : null, err.retryAfter);
    return;
  }
  rememberTask({ id: data.id, q: opts.label || body.prompt, ns: body.namespace, status: data.status, events: data.events_url });
  setAddress(data.id);
  follow(data.id, data.events_url, { t0, status: data.status, cache: data.cache, fresh: true, before: opts.before });
}

/** The message of a refused POST /v1/tasks, said once. */
function refusalText(err) {
  if (err instanceof ApiError && err.code === "overloaded") {
    const why = String(err.message || "").replace(/[;,.]?\s*retry later\.?$/i, "");
    return capital(`at capacity: ${why}`);
  }
  return capital(describe(err));
}

/**
 * Continue: asks the model to go on from a cut answer, sending the
 * question, the text so far as the assistant's turn, and a request to
 * continue. The continuation streams in after the text so far.
 */
function continueAnswer() {
  const sofar = el.answer.textContent;
  if (!lastQuestion || !sofar) return;
  const body = {
    messages: [
      { role: "user", content: lastQuestion },
      { role: "assistant", content: sofar },
      { role: "user", content: CONTINUE_TURN },
    ],
    namespace: (lastBody && lastBody.namespace) || el.ns.value.trim() || "default",
  };
  if (lastBody && lastBody.nocache) body.nocache = true;
  ask(body, { before: sofar, question: lastQuestion, label: "(continued) " + lastQuestion });
}

/**
 * Follows a task's event stream. opts: t0 (ms epoch the task started),
 * status, cache, fresh (this page started it), ttftMs.
 */
function follow(id, eventsUrl, opts) {
  const s = {
    id, t0: opts.t0, cache: opts.cache, chunks: 0, text: document.createTextNode(""),
    ttftMs: opts.ttftMs ?? null, totalMs: null, final: false, wasQueued: opts.status === "queued",
    fresh: !!opts.fresh, es: null, timer: null, poll: null,
  };
  cur = s;
  if (opts.before) {
    el.answer.replaceChildren(h("span", { class: "continued-from" }, opts.before), s.text);
  } else {
    el.answer.replaceChildren(s.text);
  }
  placeholder(opts.before ? "" : opts.status === "queued" ? "Waiting for an upstream slot…" : "Waiting for the first token…");
  el.taskId.textContent = id;
  el.copyId.hidden = false;
  setBusy(true);
  setStatus(opts.status || "running");
  setCache(opts.cache);
  el.ttft.textContent = ms(s.ttftMs);
  explain(s);
  const tick = () => { if (!s.final) el.elapsed.textContent = ms(Math.max(0, Date.now() - s.t0)); };
  s.tick = tick;
  tick();
  s.timer = setInterval(tick, 100);
  if (opts.status === "queued") { pollQueued(s); refreshBudget(); }

  const es = new EventSource(eventsUrl);
  s.es = es;
  const mine = () => cur === s && !s.final;
  es.addEventListener("open", () => { if (mine()) setConn("● live", "live"); });
  es.addEventListener("meta", (ev) => {
    if (!mine()) return;
    const m = parse(ev.data);
    if (m && m.cache) { s.cache = m.cache; setCache(m.cache); explain(s); }
  });
  es.addEventListener("delta", (ev) => {
    if (!mine()) return;
    const d = parse(ev.data);
    if (!d || typeof d.text !== "string") return;
    if (!s.text.data) placeholder("");
    s.text.appendData(d.text);
    if (el.status.textContent === "queued") { setStatus("running"); explain(s); }
    // The event id is the sequence number of its (last) delta: the chunk
    // count, exact even when a lagging reader got deltas merged.
    const seq = Number(ev.lastEventId);
    s.chunks = Number.isInteger(seq) && seq > 0 ? seq : s.chunks + 1;
    el.chunks.textContent = String(s.chunks);
    s.tick();
    if (el.status.textContent !== "running") setStatus("running");
    if (s.ttftMs == null && s.fresh) {
      s.ttftMs = Date.now() - s.t0; // refined by the server's figure at the end
      el.ttft.textContent = ms(s.ttftMs);
      explain(s);
    }
  });
  es.addEventListener("done", (ev) => { if (mine()) finish(s, "done", parse(ev.data)); });
  es.addEventListener("partial", (ev) => {
    if (!mine()) return;
    const d = parse(ev.data) || {};
    finish(s, "partial", d);
    showCut(d.notice || "The answer was cut short (" + (d.finish_reason || "cut") + ").");
  });
  es.addEventListener("error", (ev) => {
    if (!mine()) return;
    if (ev instanceof MessageEvent && ev.data) {
      // sluice's terminal error event.
      const d = parse(ev.data) || {};
      finish(s, d.code === "cancelled" ? "cancelled" : "failed", d);
      if (d.code !== "cancelled") {
        const msg = upstreamMessage(d);
        showError(msg, lastBody && s.fresh ? () => ask(lastBody) : () => reattach(s.id));
      }
      return;
    }
    // The connection's error: EventSource retries on its own (with
    // Last-Event-ID) unless the server refused the stream outright.
    if (es.readyState === EventSource.CONNECTING) {
      setConn("reconnecting…", "warn");
    } else {
      setConn("disconnected", "bad");
      lostStream(s);
    }
  });
}

/**
 * Shows the notice of a cut answer, with Continue when the question is
 * known (a retry would start over and be cut again at the same cap).
 */
function showCut(text) {
  el.noticeText.textContent = text;
  el.notice.hidden = false;
  el.answer.classList.add("cut");
  el.noticeContinue.hidden = !lastQuestion;
}

/** The stream was refused (not a reconnectable drop): find out why. */
async function lostStream(s) {
  try {
    const { data } = await call("GET", "/v1/tasks/" + encodeURIComponent(s.id));
    if (cur !== s) return;
    if (FINAL.has(data.status)) {
      // Show what the task has, as polled.
      s.text.data = data.text || "";
      finish(s, data.status, { finish_reason: data.finish_reason, first_token_ms: data.first_token_ms, total_ms: data.total_ms, chunks: data.chunks });
      return;
    }
    showError("The event stream was refused; the task is still " + data.status + ".", () => reattach(s.id));
  } catch (err) {
    if (cur !== s) return;
    finish(s, el.status.textContent, {});
    showError("Lost the event stream: " + describe(err), () => reattach(s.id));
  }
}

/** While the task waits for budget, polls its status once a second. */
function pollQueued(s) {
  s.poll = setTimeout(async () => {
    if (cur !== s || s.final || el.status.textContent !== "queued") return;
    try {
      const { data } = await call("GET", "/v1/tasks/" + encodeURIComponent(s.id));
      if (cur === s && !s.final && data.status !== "queued" && !FINAL.has(data.status)) {
        setStatus(data.status);
        if (!el.answer.textContent) placeholder("Waiting for the first token…");
      }
      if (cur === s && !s.final) explain(s);
    } catch { /* the event stream reports real trouble */ }
    pollQueued(s);
  }, 1000);
}

/** The terminal event: close the stream (or EventSource reconnects). */
function finish(s, status, d) {
  d = d || {};
  s.final = true;
  if (s.es) s.es.close();
  clearInterval(s.timer);
  clearTimeout(s.poll);
  setBusy(false);
  setStatus(status);
  setConn("");
  if (typeof d.first_token_ms === "number") s.ttftMs = d.first_token_ms;
  if (typeof d.total_ms === "number") s.totalMs = d.total_ms;
  if (typeof d.chunks === "number") s.chunks = d.chunks;
  s.finishReason = d.finish_reason;
  el.ttft.textContent = ms(s.ttftMs);
  el.elapsed.textContent = ms(s.totalMs ?? Date.now() - s.t0);
  el.chunks.textContent = String(s.chunks);
  placeholder(el.answer.textContent ? "" : "(no answer text)");
  explain(s);
  updateRecent(s.id, status);
  // The task's slot is free before its terminal event: show it now, not
  // at the next poll.
  refreshBudget();
  // The task's own record is authoritative (cancelled vs failed, upstream).
  call("GET", "/v1/tasks/" + encodeURIComponent(s.id)).then(({ data }) => {
    if (cur !== s) return;
    if (data.status && FINAL.has(data.status)) { setStatus(data.status); updateRecent(s.id, data.status); }
    s.upstream = data.upstream;
    explain(s);
  }).catch(() => {});
}

/** Re-attaches to a task by id: checks it exists, then replays its events. */
async function reattach(rawId) {
  const id = String(rawId || "").trim();
  stopFollowing();
  resetView();
  if (!id) return;
  setAddress(id);
  el.taskId.textContent = id;
  setStatus("loading");
  let view;
  try {
    ({ data: view } = await call("GET", "/v1/tasks/" + encodeURIComponent(id)));
  } catch (err) {
    setStatus("idle");
    if (err.status === 401) { needKey(() => reattach(id)); return; }
    showError(err.status === 404
      ? `No task ${id} on this server: finished tasks are kept for a limited time, and a mistyped id is not found either.`
      : capital(describe(err)), err.status === 404 ? null : () => reattach(id));
    return;
  }
  const known = recentTasks().find((t) => t.id === view.id);
  if (known && known.q && !el.prompt.value) el.prompt.value = known.q;
  lastQuestion = known && known.q && !known.q.startsWith("(continued) ") ? known.q : "";
  let events = known && known.events;
  if (!events || (apiKey() && !events.includes("token="))) {
    if (apiKey()) { pollTask(view); return; } // no token for EventSource: poll
    events = `/v1/tasks/${encodeURIComponent(view.id)}/events`;
  }
  rememberTask({ id: view.id, q: known && known.q, ns: view.namespace, status: view.status, events });
  follow(view.id, events, {
    t0: Date.parse(view.created_at) || Date.now(), status: view.status, cache: view.cache,
    ttftMs: view.first_token_ms,
  });
}

/** Follows a task by polling GET /v1/tasks/{id} (auth on, no events token). */
function pollTask(view) {
  const s = {
    id: view.id, t0: Date.parse(view.created_at) || Date.now(), cache: view.cache, chunks: 0,
    text: document.createTextNode(""), ttftMs: null, totalMs: null, final: false, timer: null, poll: null,
  };
  cur = s;
  el.answer.replaceChildren(s.text);
  el.copyId.hidden = false;
  setCache(view.cache);
  setBusy(true);
  setConn("polling", "warn");
  s.timer = setInterval(() => { if (!s.final) el.elapsed.textContent = ms(Date.now() - s.t0); }, 100);
  const apply = (v) => {
    s.text.data = v.text || "";
    placeholder(s.text.data ? "" : "Waiting for the first token…");
    s.chunks = v.chunks || 0;
    s.ttftMs = v.first_token_ms;
    el.chunks.textContent = String(s.chunks);
    el.ttft.textContent = ms(s.ttftMs);
    setStatus(v.status);
    if (FINAL.has(v.status)) {
      finish(s, v.status, { finish_reason: v.finish_reason, first_token_ms: v.first_token_ms, total_ms: v.total_ms, chunks: v.chunks });
      if (v.status === "partial") showCut("The answer was cut short (" + v.finish_reason + ").");
      if (v.status === "failed" && v.error) showError(upstreamMessage(v.error), null);
      return;
    }
    s.poll = setTimeout(async () => {
      if (cur !== s) return;
      try { apply((await call("GET", "/v1/tasks/" + encodeURIComponent(s.id))).data); } catch (err) { showError(describe(err), () => reattach(s.id)); }
    }, 500);
  };
  apply(view);
}

/** A 401: show the key field, and run again once a key is entered. */
function needKey(again) {
  afterKey = again;
  showError(apiKey()
    ? "The API key was refused: enter a valid one above."
    : "This server requires an API key: enter it above.", null);
  el.authCard.hidden = false;
  el.authKey.focus();
}

function upstreamMessage(d) {
  const base = {
    upstream_error: "The model upstream failed before answering",
    upstream_unavailable: "The model upstream is unavailable (circuit breaker open)",
    ttft_timeout: "The model did not start answering in time",
    overloaded: "sluice was at capacity",
  }[d.code] || "The task failed";
  return `${base}${d.message ? ": " + d.message : ""}${d.code ? " (" + d.code + ")" : ""}. You can retry.`;
}

async function stopTask() {
  if (!cur) return;
  const s = cur;
  el.stop.disabled = true;
  try {
    const { data } = await call("DELETE", "/v1/tasks/" + encodeURIComponent(s.id));
    if (cur === s && !s.final) finish(s, data.status || "cancelled", { finish_reason: data.finish_reason, first_token_ms: data.first_token_ms, total_ms: data.total_ms, chunks: data.chunks });
  } catch (err) {
    showError("Could not stop the task: " + describe(err), null);
  } finally {
    el.stop.disabled = false;
  }
}

// ---------------------------------------------------------------- recent tasks and address

function recentTasks() {
  try { return JSON.parse(localStorage.getItem(RECENT_KEY)) || []; } catch { return []; }
}

function rememberTask(t) {
  const list = recentTasks().filter((x) => x.id !== t.id);
  const old = recentTasks().find((x) => x.id === t.id) || {};
  list.unshift({ ...old, ...Object.fromEntries(Object.entries(t).filter(([, v]) => v !== undefined)), at: old.at || Date.now() });
  try { localStorage.setItem(RECENT_KEY, JSON.stringify(list.slice(0, 8))); } catch { /* private mode */ }
  renderRecent();
}

function updateRecent(id, status) {
  const list = recentTasks();
  const t = list.find((x) => x.id === id);
  if (!t) return;
  t.status = status;
  try { localStorage.setItem(RECENT_KEY, JSON.stringify(list)); } catch { /* private mode */ }
  renderRecent();
}

function renderRecent() {
  const list = recentTasks();
  if (!list.length) { el.recent.replaceChildren(h("li", { class: "hint" }, "None yet.")); return; }
  el.recent.replaceChildren(...list.map((t) => h("li", {},
    h("button", {
      type: "button", class: "recent-item", "data-task": t.id,
      "aria-label": `Re-attach to task ${t.id}: ${t.q || "(question unknown)"}, ${t.status || ""}`,
      onclick: () => reattach(t.id),
    },
    h("span", { class: "pill small st-" + (t.status || "").replace(/[^a-z]/g, "") }, t.status || "?"),
    h("span", { class: "recent-q" }, t.q || t.id),
    h("span", { class: "recent-meta" }, `${t.ns || "default"} · ${new Date(t.at).toLocaleTimeString()} · ${t.id.slice(0, 8)}`)))));
}

function setAddress(id) {
  const u = new URL(location.href);
  if (id) u.searchParams.set("task", id); else u.searchParams.delete("task");
  history.replaceState(null, "", u);
}

// ---------------------------------------------------------------- helpers

/** On a small screen the answer is below the form: bring it into view. */
function revealAnswer() {
  const card = el.answer.closest(".card");
  const r = el.answer.getBoundingClientRect();
  if (r.top > window.innerHeight - 100 || card.getBoundingClientRect().top < 0) {
    const reduce = matchMedia("(prefers-reduced-motion: reduce)").matches;
    card.scrollIntoView({ block: "start", behavior: reduce ? "auto" : "smooth" });
  }
}

function parse(s) { try { return JSON.parse(s); } catch { return null; } }
function capital(s) { return s ? s[0].toUpperCase() + s.slice(1) + (/[.!?]$/.test(s) ? "" : ".") : s; }

// ---------------------------------------------------------------- wiring

el.form.addEventListener("submit", (e) => {
  e.preventDefault();
  const prompt = el.prompt.value.trim();
  const namespace = el.ns.value.trim() || "default";
  if (!prompt) {
    showError("Type a question first.", null);
    el.prompt.focus();
    return;
  }
  if (!NS_RE.test(namespace)) {
    showError("The namespace may only use letters, digits, dot, underscore and dash (1 to 64).", null);
    el.ns.focus();
    return;
  }
  const body = { prompt, namespace };
  if (el.nocache.checked) body.nocache = true;
  // Keep the inspector on the question just asked.
  const iq = $("insp-q"), ins = $("insp-ns");
  if (document.activeElement !== iq) { iq.value = prompt; ins.value = namespace; }
  ask(body);
  revealAnswer();
});

el.prompt.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    if (!el.send.disabled) el.form.requestSubmit();
  }
});

el.stop.addEventListener("click", stopTask);
el.noticeContinue.addEventListener("click", continueAnswer);

el.copyId.addEventListener("click", async () => {
  const id = el.taskId.textContent;
  try {
    await navigator.clipboard.writeText(id);
    el.copyId.textContent = "copied";
  } catch {
    getSelection().selectAllChildren(el.taskId);
    el.copyId.textContent = "selected";
  }
  setTimeout(() => { el.copyId.textContent = "copy"; }, 1500);
});

el.attachForm.addEventListener("submit", (e) => {
  e.preventDefault();
  const id = el.attachId.value.trim();
  if (!id) { el.attachId.focus(); return; }
  reattach(id);
});

setUnauthorizedHandler(() => {
  el.authCard.hidden = false;
  el.authMsg.textContent = apiKey()
    ? "The API key was refused. Enter a valid key."
    : "This server requires an API key.";
});

el.authForm.addEventListener("submit", (e) => {
  e.preventDefault();
  setApiKey(el.authKey.value.trim());
  el.authKey.value = "";
  el.authMsg.textContent = apiKey() ? "Key set for this tab." : "Key cleared.";
  hideError();
  refreshBudget();
  const again = afterKey;
  afterKey = null;
  if (again && apiKey()) again();
});
if (apiKey()) el.authCard.hidden = false;

renderRecent();
// A queued task's explanation quotes the budget: keep it current.
initBudget(() => { if (cur && !cur.final && el.status.textContent === "queued") explain(cur); });
initInspector();

const start = new URL(location.href).searchParams.get("task");
if (start) reattach(start);

// Exposed for debugging from the console; not an API.
window.sluicePage = { ask, reattach, inspect };
