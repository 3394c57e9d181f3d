// budget.js: the live budget gauge, GET /v1/budget about once a second
// (paused while the tab is hidden).

import { call, describe } from "./api.js";
import { $, h, bar } from "./dom.js";

const PERIOD = 1000;
let timer = null;
let failures = 0;
let last = null;

/** The last GET /v1/budget answer, or null before the first. */
export function lastBudget() { return last; }

let onUpdate = null;

/** Starts polling; update(data), when given, runs after every answer. */
export function initBudget(update) {
  onUpdate = update || null;
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && timer === null) poll();
  });
  poll();
}

/** Polls now (e.g. after an API key was entered). */
export function refreshBudget() {
  clearTimeout(timer);
  failures = 0;
  poll();
}

async function poll() {
  timer = null;
  const out = $("budget");
  try {
    const { data } = await call("GET", "/v1/budget");
    failures = 0;
    last = data;
    render(out, data);
    if (onUpdate) onUpdate(data);
    $("budget-updated").textContent = "live · " + new Date().toLocaleTimeString();
  } catch (err) {
    failures++;
    const why = err.status === 401 ? "needs an API key" : describe(err);
    $("budget-updated").textContent = "not updating";
    if (out.querySelector(".budget-total")) {
      out.classList.add("stale");
      out.title = why;
    } else {
      out.replaceChildren(h("p", { class: "hint" }, "Budget unavailable: " + why + "."));
    }
  }
  if (!document.hidden) {
    // Back off a little while sluice does not answer.
    timer = setTimeout(poll, PERIOD * Math.min(10, 1 + failures));
  }
}

function stat(label, value, testid) {
  return h("div", { class: "kv" }, h("span", { class: "k" }, label), h("span", { class: "v", "data-testid": testid }, String(value)));
}

function render(out, b) {
  out.classList.remove("stale");
  out.removeAttribute("title");
  const rows = (b.upstreams || []).map((u) => h("li", { class: "upstream" },
    h("div", { class: "up-head" },
      h("span", { class: "up-name" }, u.upstream || "upstream"),
      h("span", { class: "pill small br-" + String(u.breaker || "").replace(/[^a-z-]/g, "") , title: "circuit breaker" },
        "circuit " + (u.breaker || "?"))),
    bar(u.in_flight, u.limit, `${u.upstream} in flight`),
    h("div", { class: "up-nums" },
      h("span", {}, `${u.in_flight} / ${u.limit} in flight`),
      h("span", {}, `${u.queued}${u.queue_limit ? " / " + u.queue_limit : ""} queued`),
      h("span", {}, `${u.rejected_total} rejected`))));
  out.replaceChildren(
    h("div", { class: "budget-total" },
      h("div", { class: "gauge-line" },
        h("span", { class: "big", "data-testid": "budget-in-flight" }, String(b.in_flight)),
        h("span", { class: "of" }, "/"),
        h("span", { class: "big-of", "data-testid": "budget-limit" }, String(b.limit)),
        h("span", { class: "unit" }, "streams in flight")),
      bar(b.in_flight, b.limit, "streams in flight, all upstreams"),
      h("div", { class: "kvs" },
        stat("queued", b.queued, "budget-queued"),
        stat("rejected", b.rejected_total, "budget-rejected"))),
    rows.length ? h("ul", { class: "upstreams", "aria-label": "per upstream" }, rows) : "");
}
