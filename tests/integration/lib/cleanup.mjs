// cleanup.mjs - removing a test's temp folder in an after() hook without
// stopping the hooks added after it. node:test runs a test's after() hooks
// in the order they were added and skips the rest once one throws: a
// folder removed while a server still wrote into it (ENOTEMPTY) once
// skipped that server's stop, and its test file, so the whole run, waited
// for it for ever. Removing retries, then says what it left; never throws.
import fs from 'node:fs';

export function removeQuietly(t, dir) {
  try {
    fs.rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  } catch (e) {
    // a node:test context says it in the test's report; a script's
    // cleanup list (tests/e2e/lib/shop.mjs's lifetime) on stderr
    const say = t.diagnostic ? (m) => t.diagnostic(m) : (m) => console.error(m);
    say(`left ${dir}: ${e.message}`);
  }
}

export function removeAfter(t, dir) {
  t.after(() => removeQuietly(t, dir));
}
