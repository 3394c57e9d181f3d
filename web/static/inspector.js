// inspector.js: the cache inspector (POST /v1/cache/lookup, a dry run)
// and the per-namespace cache contents (GET /v1/cache/stats, purge).

import { call, describe } from "./api.js";
import { $, h, bar, secs } from "./dom.js";

export function initInspector() {
  $("insp-form").addEventListener("submit", (e) => {
    e.preventDefault();
    inspect($("insp-q").value, $("insp-ns").value);
  });
  $("cache-stats-box").addEventListener("toggle", (e) => { if (e.target.open) loadStats(); });
}

export async function inspect(q, namespace) {
  const out = $("insp-out");
  q = String(q || "").trim();
  namespace = String(namespace || "").trim() || "default";
  if (!q) {
    out.replaceChildren(h("p", { class: "error-inline" }, "Type a question to inspect."));
    $("insp-q").focus();
    return;
  }
  out.replaceChildren(h("p", { class: "hint" }, "Looking up…"));
  try {
    const { data } = await call("POST", "/v1/cache/lookup", { q, namespace });
    out.replaceChildren(render(data));
  } catch (err) {
    out.replaceChildren(h("p", { class: "error-inline" }, "Lookup failed: " + describe(err)));
  }
}

function facetList(facets, other, testid) {
  if (!facets || !facets.length) return h("span", { class: "hint", "data-testid": testid }, "no facets");
  return h("span", { class: "chips", "data-testid": testid },
    facets.map((f) => h("span", {
      class: "chip" + (other && !other.includes(f) ? " chip-diff" : ""),
      title: other && !other.includes(f) ? "not in the question" : "",
    }, f)));
}

// STAGES names the stage that decided a lookup (Explanation.stage).
const STAGES = {
  blank: "an empty question (nothing left after normalization: not cached)",
  exact: "the exact key",
  long: "the length bound (a long question uses the exact tier only)",
  empty: "an empty namespace",
  content: "no words or facets to compare (exact tier only)",
  embedder: "the embedder being unavailable (exact tier only)",
  score: "the similarity score (below the threshold)",
  facets: "the facet guard (a facet differs)",
  verify: "the verification stage (names, order and roles, intent)",
};

// verification shows what the verification stage said about the best
// candidate that passed the score and the facets, if there was one.
function verification(v) {
  if (!v) return h("span", { "data-testid": "inspector-verification", hidden: "" });
  return h("div", { class: "insp-verify", "data-testid": "inspector-verification" },
    h("span", { class: "pill small " + (v.passed ? "ok" : "bad") },
      v.passed ? "verification passed" : `verification refused (${v.check})`),
    " ", h("span", {}, v.reason || ""),
    h("div", { class: "hint" }, "candidate: ", h("q", {}, v.question || "")));
}

function render(x) {
  const hit = x.decision === "hit";
  const label = hit ? `HIT ${x.kind || ""}`.trim() : "MISS";
  const qf = (x.query && x.query.facets) || [];
  const cands = x.candidates || [];
  return h("div", { class: "insp" },
    h("div", { class: "insp-head" },
      h("span", { class: "pill big-pill " + (hit ? "cache-hit" : "cache-miss"), "data-testid": "inspector-decision" }, label),
      h("span", { class: "insp-score", "data-testid": "inspector-score" },
        `score ${Number(x.score).toFixed(3)} vs threshold ${Number(x.threshold).toFixed(2)}`)),
    bar(Math.max(0, x.score), 1, "similarity score against the threshold", x.threshold, hit ? "pass" : "fail"),
    h("p", { class: "reason", "data-testid": "inspector-reason" }, x.reason || ""),
    h("p", { class: "hint", "data-testid": "inspector-stage" }, "Decided by: " + (STAGES[x.stage] || x.stage || "?")),
    verification(x.verification),
    h("dl", { class: "insp-dl" },
      h("dt", {}, "Normalized"), h("dd", {}, h("code", {}, (x.query && x.query.normalized) || "")),
      h("dt", {}, "Facets"), h("dd", {}, facetList(qf, null, "inspector-facets")),
      h("dt", {}, "Namespace"), h("dd", {}, h("code", {}, x.namespace || "")),
      h("dt", {}, "Key"), h("dd", {}, h("code", { title: x.key || "" }, (x.key || "").slice(0, 16) + "…"))),
    h("h3", { class: "sub" }, `Nearest candidates (${cands.length})`),
    cands.length
      ? h("ol", { class: "cands", "data-testid": "inspector-candidates" }, cands.map((c) => h("li", { class: "cand" },
        h("div", { class: "cand-q" }, c.question),
        h("div", { class: "cand-row" },
          bar(Math.max(0, c.score), 1, "similarity", x.threshold,
            c.facets_match && c.score >= x.threshold ? "pass" : "fail"),
          h("span", { class: "cand-score" }, Number(c.score).toFixed(3)),
          h("span", { class: "pill small " + (c.facets_match ? "ok" : "bad") }, c.facets_match ? "facets match" : "facets differ")),
        h("div", { class: "cand-meta" },
          facetList(c.facets, qf),
          h("span", {}, `age ${secs(c.age_s)} · expires in ${secs(c.ttl_s)} · ${c.hits} hit${c.hits === 1 ? "" : "s"}`)))))
      : h("p", { class: "hint", "data-testid": "inspector-candidates" }, "Nothing cached in this namespace yet."));
}

async function loadStats() {
  const out = $("cache-stats");
  out.replaceChildren(h("p", { class: "hint" }, "Loading…"));
  try {
    const { data } = await call("GET", "/v1/cache/stats");
    const ns = data.namespaces || [];
    if (!ns.length) { out.replaceChildren(h("p", { class: "hint" }, "The cache is empty.")); return; }
    out.replaceChildren(h("table", { class: "tbl" },
      h("thead", {}, h("tr", {}, ["Namespace", "Entries", "Exact hits", "Semantic hits", "Misses"].map((t) => h("th", { scope: "col" }, t)),
        h("th", { scope: "col" }, h("span", { class: "sr-only" }, "Purge")))),
      h("tbody", {}, ns.map((n) => h("tr", {},
        h("td", {}, h("code", {}, n.namespace)),
        h("td", {}, String(n.entries)),
        h("td", {}, String(n.hits_exact)),
        h("td", {}, String(n.hits_semantic)),
        h("td", {}, String(n.misses)),
        h("td", {}, h("button", {
          type: "button", class: "small", "aria-label": "Purge namespace " + n.name,
          onclick: () => purge(n.name),
        }, "Purge")))))));
  } catch (err) {
    out.replaceChildren(h("p", { class: "error-inline" }, "Stats unavailable: " + describe(err)));
  }
}

async function purge(name) {
  if (!confirm(`Drop every cache entry of namespace "${name}" (all models)?`)) return;
  try {
    await call("DELETE", "/v1/cache/namespaces/" + encodeURIComponent(name));
  } catch (err) {
    $("cache-stats").prepend(h("p", { class: "error-inline" }, "Purge failed: " + describe(err)));
    return;
  }
  loadStats();
}
