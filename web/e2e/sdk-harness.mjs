// The shared harness of the SDK end-to-end scripts (openai-sdk.mjs,
// responses-sdk.mjs): arguments, the client, test cases and their tally,
// and polls of sluice's own endpoints.

import OpenAI from 'openai';

// harness reads `node NAME.mjs <sluice base URL> <expected answer>` and
// returns the tools of one script run.
export function harness(name) {
  const [base, expected] = process.argv.slice(2);
  if (!base || expected === undefined) {
    console.error(`usage: node ${name}.mjs <sluice base URL> <expected answer>`);
    process.exit(2);
  }
  const root = base.replace(/\/+$/, '');
  const client = new OpenAI({ baseURL: root + '/v1', apiKey: 'x', maxRetries: 0, timeout: 30_000 });
  let passed = 0;
  let failed = 0;

  const check = (cond, what) => {
    if (!cond) throw new Error('check failed: ' + what);
  };

  const test = async (caseName, fn) => {
    try {
      await fn();
      passed++;
      console.log(`ok   ${caseName}`);
    } catch (err) {
      failed++;
      console.log(`FAIL ${caseName}: ${err && err.stack ? err.stack : err}`);
    }
  };

  const getJSON = async (path) => {
    const res = await fetch(root + path);
    check(res.ok, `GET ${path}: ${res.status}`);
    return res.json();
  };

  // task returns GET /v1/tasks/{id} once the task is final.
  const task = async (id) => {
    check(id, 'a task id (x-task-id)');
    for (let i = 0; i < 500; i++) {
      const v = await getJSON('/v1/tasks/' + id);
      if (!['queued', 'running'].includes(v.status)) return v;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`task ${id} did not end`);
  };

  // waitBudget polls GET /v1/budget until pred holds.
  const waitBudget = async (pred, what) => {
    for (let i = 0; i < 500; i++) {
      if (pred(await getJSON('/v1/budget'))) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error('budget never ' + what);
  };

  // finish prints the tally the Go test reads and exits.
  const finish = () => {
    console.log(`${name} e2e: ${passed} passed, ${failed} failed`);
    process.exit(failed === 0 ? 0 : 1);
  };

  return { root, expected, client, check, test, getJSON, task, waitBudget, finish };
}
