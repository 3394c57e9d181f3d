#!/usr/bin/env node
// Real-browser end-to-end test of the sluice page, driven by playwright-core
// against a system Chromium.
//
//   node browser.mjs URL_A URL_B URL_C URL_D [SCREENSHOT_DIR]
//
// URL_A: a sluice with a normal simulated upstream (answers complete).
// URL_B: a sluice whose answers get cut (short total timeout, slow upstream),
//        e.g. -total-timeout 1s -sim-gap 150ms.
// URL_C: a sluice with one slot and no queue, whose answers take seconds,
//        e.g. -budget 1 -queue 0 -sim-ttft 50ms -sim-gap 100ms: while one
//        task streams, the next POST /v1/tasks gets a real 503 overloaded.
// URL_D: a sluice with one slot and a queue (the default), whose answers
//        take seconds, e.g. -budget 1 -sim-ttft 50ms -sim-gap 100ms: while
//        one task streams, the next one waits queued.
// The arguments may also come from SLUICE_E2E_A, SLUICE_E2E_B, SLUICE_E2E_C,
// SLUICE_E2E_D and SLUICE_ARTIFACTS; CHROMIUM overrides /usr/bin/chromium.
// Screenshots of every page state are saved there (desktop-*.png,
// phone-*.png).
// Prints one line per check and ends with "browser e2e: N passed, M failed";
// the exit code is non-zero when anything failed.

import { chromium } from "playwright-core";
import { mkdtempSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const A = (process.argv[2] || process.env.SLUICE_E2E_A || "").replace(/\/+$/, "");
const B = (process.argv[3] || process.env.SLUICE_E2E_B || "").replace(/\/+$/, "");
const C = (process.argv[4] || process.env.SLUICE_E2E_C || "").replace(/\/+$/, "");
const D = (process.argv[5] || process.env.SLUICE_E2E_D || "").replace(/\/+$/, "");
let shots = process.argv[6] || process.env.SLUICE_ARTIFACTS || "";
if (!A || !B || !C || !D) {
  console.error("usage: node browser.mjs URL_A URL_B URL_C URL_D [SCREENSHOT_DIR]");
  process.exit(2);
}
if (!shots) shots = mkdtempSync(join(tmpdir(), "sluice-e2e-"));
mkdirSync(shots, { recursive: true });
console.log(`screenshots: ${shots}`);

const T = 20_000; // per wait
// A digit first: SKU-<run> must read as an identifier (letters and digits
// mixed), and Date.now() in base 36 is all letters about one run in five.
const run = "7" + Date.now().toString(36);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const HOOKS = ["prompt", "namespace", "send", "answer", "task-id", "status", "cache-status", "ttft", "notice"];

let passed = 0;
let failed = 0;
const problems = []; // console errors, page errors, foreign requests
// Console errors a step expects (Chromium logs HTTP errors): {re, max, seen}.
// Matches beyond max, or with no allowance set, are problems.
let allowed = null;
const allow = (re, max = Infinity) => (allowed = { re, max, seen: 0 });

async function check(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    passed++;
    console.log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${(e && e.stack) || e}`);
  }
}

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

/** Wires the failure detectors onto a page. */
function watch(page, label) {
  page.on("console", (m) => {
    if (m.type() !== "error") return;
    if (allowed && allowed.seen < allowed.max && allowed.re.test(m.text())) {
      allowed.seen++;
      return;
    }
    problems.push(`${label}: console error: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`${label}: page error: ${e.message}`));
  page.on("request", (r) => {
    const u = new URL(r.url());
    if (u.protocol.startsWith("http") && ![A, B, C, D].some((x) => u.origin === new URL(x).origin)) {
      problems.push(`${label}: external request: ${r.url()}`);
    }
  });
  return page;
}

const tid = (id) => `[data-testid="${id}"]`;
const text = (page, id) => page.locator(tid(id)).textContent();
const waitText = async (page, id, re, timeout = T) => {
  try {
    await page.waitForFunction(([sel, src, flags]) => {
      const el = document.querySelector(sel);
      return el && new RegExp(src, flags).test(el.textContent);
    }, [tid(id), re.source, re.flags], { timeout });
  } catch (e) {
    const last = await page.locator(tid(id)).textContent().catch(() => "(gone)");
    throw new Error(`${id} did not match ${re} within ${timeout} ms; it says ${JSON.stringify(last)}`);
  }
};

/** Records every answer length change (with the status at that moment). */
async function recordLengths(page) {
  await page.evaluate(() => {
    const a = document.querySelector('[data-testid="answer"]');
    const s = document.querySelector('[data-testid="status"]');
    window.__lens = [];
    window.__statuses = new Set();
    const note = () => {
      window.__lens.push({ len: a.textContent.length, status: s.textContent });
      window.__statuses.add(s.textContent);
    };
    new MutationObserver(note).observe(a, { characterData: true, childList: true, subtree: true });
    new MutationObserver(note).observe(s, { characterData: true, childList: true, subtree: true });
  });
}

/** A full-page screenshot from the top (the side column is sticky). */
async function fullShot(page, name) {
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(shots, name), fullPage: true });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A JSON call from node (not the page): {status, body}. */
async function api(method, url, body) {
  const r = await fetch(url, {
    method, headers: body ? { "Content-Type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined, signal: AbortSignal.timeout(T),
  });
  return { status: r.status, body: await r.json() };
}

async function ask(page, q, ns, { key = false } = {}) {
  await page.fill(tid("prompt"), q);
  await page.fill(tid("namespace"), ns);
  if (key) {
    await page.focus(tid("prompt"));
    await page.keyboard.press("Enter");
  } else {
    await page.click(tid("send"));
  }
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run"],
});

try {
  const desktop = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  desktop.setDefaultTimeout(T);
  const page = watch(await desktop.newPage(), "desktop");
  const q1 = `how many SKU-${run} are left in zone A?`;
  const ns = "e2e";
  let id1 = "";
  let answer1 = "";

  await check("page loads with every data-testid hook", async () => {
    const resp = await page.goto(A + "/");
    assert(resp && resp.ok(), `GET / -> ${resp && resp.status()}`);
    for (const h of HOOKS) {
      assert(await page.locator(tid(h)).count() === 1, `missing data-testid=${h}`);
    }
    assert(/sluice/i.test(await page.title()), "title");
  });

  await check("asks a question and watches the answer stream in (MISS, then done)", async () => {
    await recordLengths(page);
    await ask(page, q1, ns);
    await waitText(page, "status", /^done$/, 30_000);
    const lens = await page.evaluate(() => window.__lens);
    const statuses = await page.evaluate(() => [...window.__statuses]);
    const before = new Set(lens.filter((l) => l.status !== "done" && l.len > 0).map((l) => l.len));
    assert(before.size >= 2, `answer did not grow while streaming: distinct lengths before done = ${[...before]}`);
    assert(statuses.includes("running"), `status never showed running: ${statuses}`);
    id1 = (await text(page, "task-id")).trim();
    assert(UUID.test(id1), `task id ${id1}`);
    answer1 = await text(page, "answer");
    assert(answer1.length > 10, "answer is empty");
    assert(/MISS/.test(await text(page, "cache-status")), `cache-status ${await text(page, "cache-status")}`);
    assert(/\d+(\.\d+)? (ms|s)/.test(await text(page, "ttft")), `ttft ${await text(page, "ttft")}`);
    assert(Number(await text(page, "chunks")) >= 2, "chunks");
    assert(new URL(page.url()).searchParams.get("task") === id1, `address does not carry the task: ${page.url()}`);
    assert(await page.locator(tid("notice")).isHidden(), "notice shown on a complete answer");
    assert((await text(page, "send")) === "Send", `send button after done: ${await text(page, "send")}`);
    // The budget card shows the slot given back as soon as the task ended
    // (the page refreshes it then, not at its next poll).
    await waitText(page, "budget-in-flight", /^0$/, 700);
    console.log(`     streamed ${before.size} intermediate lengths, ${await text(page, "chunks")} chunks, ttft ${await text(page, "ttft")}`);
  });
  await fullShot(page, "desktop-1-streamed.png");

  await check("asks again (Enter key) and sees a cache HIT", async () => {
    await ask(page, q1, ns, { key: true });
    await page.waitForFunction(([sel, id]) => {
      const el = document.querySelector(sel);
      return el && el.textContent !== id && el.textContent !== "—";
    }, [tid("task-id"), id1]);
    await waitText(page, "status", /^done$/);
    const cs = await text(page, "cache-status");
    assert(/HIT/.test(cs), `cache-status ${cs}`);
    assert((await text(page, "answer")) === answer1, "cached answer differs from the first");
    assert(/cache/i.test(await text(page, "why")), "why line does not mention the cache");
  });

  await check("no-cache switch gives BYPASS", async () => {
    await page.check(tid("nocache"));
    await ask(page, q1, ns);
    await waitText(page, "cache-status", /BYPASS/);
    await waitText(page, "status", /^done$/, 30_000);
    await page.uncheck(tid("nocache"));
  });

  await check("cache inspector shows the decision, score vs threshold, facets and candidates", async () => {
    await page.fill(tid("inspector-q"), q1);
    await page.fill(tid("inspector-namespace"), ns);
    await page.click(tid("inspect"));
    await waitText(page, "inspector-decision", /HIT/);
    const facets = await text(page, "inspector-facets");
    assert(facets.includes(`sku-${run}`), `facets: ${facets}`);
    assert(/threshold/.test(await text(page, "inspector-score")), "score vs threshold");
    assert(await page.locator(`${tid("inspector-candidates")} li`).count() >= 1, "no candidates listed");
    // A different SKU: a facet mismatch, shown as a MISS with its reason.
    await page.fill(tid("inspector-q"), `how many SKU-${run}9 are left in zone A?`);
    await page.click(tid("inspect"));
    await waitText(page, "inspector-decision", /MISS/);
    assert(/facet/i.test(await text(page, "inspector-reason")), `reason: ${await text(page, "inspector-reason")}`);
  });

  await check("cache contents table labels every column", async () => {
    await page.click("#cache-stats-box summary");
    await page.waitForSelector(`${tid("cache-stats")} table`);
    const heads = await page.locator(`${tid("cache-stats")} th`).allTextContents();
    for (const want of ["Namespace", "Entries", "Exact hits", "Semantic hits", "Misses", "Purge"]) {
      assert(heads.includes(want), `column headers ${JSON.stringify(heads)} lack ${want}`);
    }
    const cells = await page.locator(`${tid("cache-stats")} tbody tr`).first().locator("td").allTextContents();
    assert(cells.length === heads.length, `${cells.length} cells under ${heads.length} headers`);
    assert(cells.every((c) => !/\d+ \/ \d+/.test(c)), `an unlabelled "a / b" cell: ${JSON.stringify(cells)}`);
  });

  await check("budget gauge renders and updates", async () => {
    await waitText(page, "budget-limit", /^[1-9]\d*$/);
    const first = await text(page, "budget-updated");
    await page.waitForFunction(([sel, v]) => document.querySelector(sel).textContent !== v,
      [tid("budget-updated"), first], { timeout: 5000 });
    assert(await page.locator(`${tid("budget")} .upstream`).count() >= 1, "no upstream rows");
  });
  await fullShot(page, "desktop-2-inspector.png");

  await check("re-attaches after a reload with ?task=ID", async () => {
    await page.goto(`${A}/?task=${id1}`);
    await waitText(page, "status", /^done$/);
    assert((await text(page, "task-id")) === id1, "task id");
    assert((await text(page, "answer")) === answer1, "replayed answer differs");
    assert(/MISS/.test(await text(page, "cache-status")), "cache decision of the original task");
  });

  await check("re-attaches by pasting a task id", async () => {
    await page.goto(`${A}/`);
    await page.fill(tid("attach-id"), id1);
    await page.click(tid("attach"));
    await waitText(page, "status", /^done$/);
    assert((await text(page, "answer")) === answer1, "replayed answer differs");
    assert(new URL(page.url()).searchParams.get("task") === id1, "address");
  });

  await check("unknown task id shows a readable message", async () => {
    await page.fill(tid("attach-id"), "00000000-0000-4000-8000-000000000000");
    allow(/status of 404/); // Chromium logs the 404 answer; expected here
    await page.click(tid("attach"));
    await waitText(page, "error", /No task/);
    assert(await page.locator(tid("retry")).isHidden(), "retry offered for a missing task");
  });

  await check("overload (real 503 + Retry-After) shows a message and a counting-down retry", async () => {
    allowed = null; // nothing carried over from an earlier step
    try {
      await page.goto(`${C}/`);
      // Hold C's only slot (no queue) with a long answer started from here.
      const held = await api("POST", `${C}/v1/tasks`, { prompt: `tell me everything about holding slot ${run}`, namespace: ns });
      assert(held.status === 202, `holding task: POST /v1/tasks -> ${held.status} ${JSON.stringify(held.body)}`);
      assert(held.body.status === "running", `holding task is ${held.body.status}, not running`);
      const holdId = held.body.id;

      // Every state of the Retry button, timed in the page.
      await page.evaluate((sel) => {
        const b = document.querySelector(sel);
        window.__retry = [];
        const note = () => window.__retry.push({ t: performance.now(), disabled: b.disabled, hidden: b.hidden, label: b.textContent });
        new MutationObserver(note).observe(b, { attributes: true, characterData: true, childList: true, subtree: true });
      }, tid("retry"));
      // Chromium logs the one refused POST; exactly that one is expected.
      const once = allow(/status of 503/, 1);
      const refusal = page.waitForResponse((r) => r.url() === `${C}/v1/tasks` && r.request().method() === "POST");
      await ask(page, `overload ${run}`, ns);
      const resp = await refusal;
      assert(resp.status() === 503, `POST /v1/tasks -> ${resp.status()}, not 503`);
      assert(resp.headers()["retry-after"] === "1", `Retry-After: ${resp.headers()["retry-after"]}`);
      const body = await resp.json();
      assert(body && body.error && body.error.code === "overloaded", `503 body: ${JSON.stringify(body)}`);
      const during = await api("GET", `${C}/v1/tasks/${holdId}`);
      assert(during.body.status === "running", `holding task is ${during.body.status} at the refusal: the 503 was not from a held slot`);
      await waitText(page, "error", /capacity/);
      // Said once: the Retry button counts down, the text does not repeat it.
      const msg = await page.locator("#error-text").textContent();
      assert(!/retry|try again/i.test(msg), `the message repeats the retry advice: ${msg}`);
      assert((await text(page, "status")) === "refused", `status pill after a 503: ${await text(page, "status")}`);
      assert((await text(page, "send")) === "Send", `send button after a 503: ${await text(page, "send")}`);
      // The error box does not touch the answer box.
      const gap = await page.evaluate(() => document.querySelector('[data-testid="answer"]').getBoundingClientRect().top
        - document.querySelector('[data-testid="error"]').getBoundingClientRect().bottom);
      assert(gap >= 8, `error box ${gap}px from the answer box`);
      const retry = page.locator(tid("retry"));
      assert(await retry.isDisabled(), "retry enabled before Retry-After passed");
      assert(/Retry in \d s/.test(await retry.textContent()), `retry label: ${await retry.textContent()}`);
      await page.screenshot({ path: join(shots, "desktop-3-overload.png") });
      await page.waitForFunction((sel) => !document.querySelector(sel).disabled, tid("retry"), { timeout: 5000 });
      assert(/Retry now/.test(await retry.textContent()), `retry label: ${await retry.textContent()}`);
      const states = await page.evaluate(() => window.__retry);
      const shown = states.find((x) => !x.hidden && x.disabled && /Retry in 1 s/.test(x.label));
      const enabled = states.find((x) => !x.hidden && !x.disabled);
      assert(shown && enabled, `retry states: ${JSON.stringify(states)}`);
      assert(enabled.t - shown.t >= 900, `retry enabled ${Math.round(enabled.t - shown.t)} ms after the refusal, before Retry-After (1 s) passed`);
      for (const end = Date.now() + 5000; once.seen < 1 && Date.now() < end;) await sleep(50); // events arrive async
      assert(once.seen === 1, `console errors for the 503: ${once.seen}, want exactly 1`);

      // Free the slot: wait for the holding task to finish, then retry.
      const deadline = Date.now() + 30_000;
      let st = during.body.status;
      while (st !== "done") {
        assert(st === "running", `holding task ended ${st}`);
        assert(Date.now() < deadline, "holding task still running after 30 s");
        await sleep(100);
        st = (await api("GET", `${C}/v1/tasks/${holdId}`)).body.status;
      }
      allowed = null; // from here on, another 503 is a failure
      await retry.click();
      await waitText(page, "status", /^done$/, 30_000);
      assert(await page.locator(tid("error")).isHidden(), "error still shown after a good retry");
      assert((await text(page, "answer")).length > 10, "answer is empty after the retry");
      assert(UUID.test((await text(page, "task-id")).trim()), `task id ${await text(page, "task-id")}`);
    } finally {
      allowed = null;
    }
  });

  await check("a queued task says it waits for a slot, then streams and ends", async () => {
    await page.goto(`${D}/`);
    // Hold D's only slot; the page's question then waits in D's queue.
    const held = await api("POST", `${D}/v1/tasks`, { prompt: `tell me everything about queue holder ${run}`, namespace: ns, nocache: true });
    assert(held.status === 202 && held.body.status === "running", `holding task: ${held.status} ${JSON.stringify(held.body)}`);
    await ask(page, `where is pallet ${run} stored?`, ns);
    await waitText(page, "status", /^queued$/);
    await waitText(page, "why", /waiting for an upstream slot/i);
    const why = await text(page, "why");
    assert(!/answering|answered|waited/.test(why), `queued, yet: ${why}`);
    assert(/slot/i.test(await text(page, "send")) && !/Streaming/.test(await text(page, "send")), `send button while queued: ${await text(page, "send")}`);
    assert(await page.locator(tid("stop")).isVisible(), "no Stop while queued");
    await page.screenshot({ path: join(shots, "desktop-3a-queued.png") });
    const del = await fetch(`${D}/v1/tasks/${held.body.id}`, { method: "DELETE", signal: AbortSignal.timeout(T) });
    assert(del.ok, `DELETE holding task: ${del.status}`);
    await waitText(page, "status", /^(running|done)$/);
    await waitText(page, "status", /^done$/, 30_000);
    assert(/waited in the queue/.test(await text(page, "why")), `why after a queued task: ${await text(page, "why")}`);
    assert((await text(page, "send")) === "Send", "send button after done");
    await waitText(page, "budget-in-flight", /^0$/, 700);
  });

  const pageB = watch(await desktop.newPage(), "desktop-B");
  await check("a cut answer shows the partial text and the notice", async () => {
    await pageB.goto(`${B}/`);
    await ask(pageB, `tell me everything about pallet ${run}`, ns);
    await waitText(pageB, "status", /^partial$/);
    const notice = pageB.locator(tid("notice"));
    assert(await notice.isVisible(), "notice hidden");
    const nt = await notice.textContent();
    assert(/cut/i.test(nt), `notice: ${nt}`);
    assert(/SLUICE_TOTAL_TIMEOUT/.test(nt) && /continue/i.test(nt), `the notice does not say how to get the rest: ${nt}`);
    assert(!/retry the question/i.test(nt), `the notice promises a retry gets the rest: ${nt}`);
    assert((await text(pageB, "answer")).length > 0, "no partial text");
    assert(await pageB.locator(tid("continue")).isVisible(), "no Continue button");
  });
  await fullShot(pageB, "desktop-4-partial.png");

  await check("Continue asks for the rest with the text so far as the assistant's turn", async () => {
    const q = `tell me everything about pallet ${run}`;
    const first = await text(pageB, "answer");
    const firstId = await text(pageB, "task-id");
    const sent = pageB.waitForRequest((r) => r.url() === `${B}/v1/tasks` && r.method() === "POST");
    await pageB.click(tid("continue"));
    const body = (await sent).postDataJSON();
    const m = body.messages || [];
    assert(m.length === 3 && m[0].role === "user" && m[0].content === q && m[1].role === "assistant" && m[1].content === first
      && m[2].role === "user" && /continue/i.test(m[2].content), `continue request: ${JSON.stringify(body).slice(0, 300)}`);
    await pageB.waitForFunction(([sel, id]) => document.querySelector(sel).textContent !== id, [tid("task-id"), firstId]);
    await waitText(pageB, "status", /^(partial|done)$/);
    const after = await text(pageB, "answer");
    assert(after.startsWith(first) && after.length > first.length, `the continuation did not follow the text so far (${first.length} -> ${after.length} chars)`);
  });
  await fullShot(pageB, "desktop-4b-continued.png");

  await check("reload while streaming re-attaches to the running task", async () => {
    await ask(pageB, `describe dock door ${run} in detail`, ns);
    await waitText(pageB, "status", /^running$/);
    await pageB.waitForFunction((sel) => document.querySelector(sel).textContent.length > 0, tid("answer"));
    const id = await text(pageB, "task-id");
    await pageB.screenshot({ path: join(shots, "desktop-5-streaming.png") });
    await pageB.reload();
    await waitText(pageB, "status", /^partial$/);
    assert((await text(pageB, "task-id")) === id, "re-attached to another task");
    assert((await text(pageB, "answer")).length > 0, "no text after re-attach");
    assert(await pageB.locator(tid("notice")).isVisible(), "notice hidden after re-attach");
  });
  await desktop.close();

  const phone = await browser.newContext({
    viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true,
  });
  phone.setDefaultTimeout(T);
  const pp = watch(await phone.newPage(), "phone");
  await check("phone width: asks, streams, no horizontal scrolling", async () => {
    await pp.goto(`${A}/`);
    await ask(pp, `is SKU-${run}7 in stock in zone B?`, ns);
    await waitText(pp, "status", /^done$/, 30_000);
    const overflow = await pp.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert(overflow <= 0, `page is ${overflow}px wider than the phone`);
    await pp.fill(tid("inspector-q"), `is SKU-${run}7 in stock in zone B?`);
    await pp.fill(tid("inspector-namespace"), ns);
    await pp.click(tid("inspect"));
    await waitText(pp, "inspector-decision", /HIT/);
  });
  await pp.screenshot({ path: join(shots, "phone-1-viewport.png") });
  await fullShot(pp, "phone-1-answer.png");
  await check("phone width: cut answer notice", async () => {
    await pp.goto(`${B}/`);
    await ask(pp, `list every bin in aisle ${run}`, ns);
    await waitText(pp, "status", /^partial$/);
    assert(await pp.locator(tid("notice")).isVisible(), "notice hidden");
    const overflow = await pp.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert(overflow <= 0, `page is ${overflow}px wider than the phone`);
  });
  await pp.screenshot({ path: join(shots, "phone-2-partial.png") });
  await phone.close();

  await check("no console errors, page errors or external requests", async () => {
    assert(problems.length === 0, "\n  " + problems.join("\n  "));
  });
} catch (e) {
  failed++;
  console.log(`FAIL harness: ${(e && e.stack) || e}`);
} finally {
  await browser.close();
}

console.log(`browser e2e: ${passed} passed, ${failed} failed`);
process.exitCode = failed > 0 ? 1 : 0;
