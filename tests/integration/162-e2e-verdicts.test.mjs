// 162: the e2e scenario's judge (tests/e2e/lib/shop.mjs, classify): tests
// 160-161 and tests/e2e/compare trust it to tell a right verdict from a
// wrong one, so it is checked on the logs it meets (shortened from real
// runs of Django 3.2's test runner and Playwright's line reporter): the
// buggy branch is right only when it fails on its own bug and on nothing
// else; a run refused by wtproxy is 'refused', whatever the branch.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classify } from '../e2e/lib/shop.mjs';

const djangoOk = `Creating test database for alias 'default'...
System check identified no issues (0 silenced).
....
----------------------------------------------------------------------
Ran 4 tests in 0.061s

OK
Destroying test database for alias 'default'...
`;

const fail = (name, msg) => `======================================================================
FAIL: ${name} (store.tests.test_shop.ShopTests.${name})
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/tmp/wt-c/store/tests/test_shop.py", line 17, in ${name}
    self.assertEqual(total, Decimal('6.10'))
AssertionError: ${msg}
`;

// Django's output when the tests named by fails (name -> message) fail
const djangoFailing = (fails) => `Creating test database for alias 'default'...
System check identified no issues (0 silenced).
${'F'.repeat(fails.length)}${'.'.repeat(4 - fails.length)}
${fails.map(([n, m]) => fail(n, m)).join('\n')}
----------------------------------------------------------------------
Ran 4 tests in 0.084s

FAILED (failures=${fails.length})
Destroying test database for alias 'default'...
`;
const bugFails = [
  ['test_basket_page', '\'<strong id="total">$6.10</strong>\' not found in \'...$3.70...\''],
  ['test_basket_total_counts_quantities', "Decimal('3.70') != Decimal('6.10')"],
];
const djangoBug = djangoFailing(bugFails);

const djangoNoDb = `Creating test database for alias 'default'...
Got an error creating the test database: duplicate key value violates unique constraint "pg_database_datname_index"
DETAIL:  Key (datname)=(test_shop) already exists.
`;

const djangoBugThenTeardown = `${djangoBug}Traceback (most recent call last):
  File "manage.py", line 9, in <module>
psycopg2.errors.ObjectInUse: database "test_shop" is being accessed by other users
`;

const djangoOtherFailure = djangoFailing([...bugFails, ['test_index_lists_products', '\'<td class="price">$1.20</td>\' not found']]);

const e2eHeader = (n, title, body) => `  ${n}) e2e/shop.spec.mjs:12:1 › ${title} ───────────────────────────────

    Error: expect(locator).toHaveText(expected) failed

${body}
`;

const e2eBug = `
Running 2 tests using 1 worker

[1/2] e2e/shop.spec.mjs:5:1 › the shop lists its products
[2/2] e2e/shop.spec.mjs:12:1 › basket total counts quantities
${e2eHeader(1, 'basket total counts quantities', `    Locator:  locator('#total')
    Expected: "$6.10"
    Received: "$3.70"
    Timeout:  1000ms`)}
  1 failed
    e2e/shop.spec.mjs:12:1 › basket total counts quantities ────────────────
  1 passed (10.3s)
`;

const e2eOk = `
Running 2 tests using 1 worker

[1/2] e2e/shop.spec.mjs:5:1 › the shop lists its products
[2/2] e2e/shop.spec.mjs:12:1 › basket total counts quantities
  2 passed (8.1s)
`;

const e2eServerGone = `
Running 2 tests using 1 worker

[WebServer] Error: That port is already in use.
${e2eHeader(1, 'the shop lists its products', '    Error: page.goto: net::ERR_CONNECTION_REFUSED at http://localhost:8000/')}
${e2eHeader(2, 'basket total counts quantities', '    Error: page.goto: net::ERR_CONNECTION_REFUSED at http://localhost:8000/basket/?apple=3&bread=1')}
  2 failed
`;

const e2eWrongServer = `
Running 3 tests using 1 worker

${e2eHeader(1, 'ten apples get the bulk discount', `    Locator: locator('#line-apple .note')
    Expected: "bulk −10%"
    Timeout: 1000ms
    Error: element(s) not found`)}
  1 failed
  2 passed (12.0s)
`;

const e2eRefused = `
Running 2 tests using 1 worker

  1) e2e/shop.spec.mjs:5:1 › the shop lists its products ─────────

    Error: GET / answered 409 X-Wtproxy-Refused: checkout-mismatch: port 41234 is served by /tmp/wt-old, not by /tmp/wt-c

  2 failed
`;

// the readiness check was refused, so Playwright ran `wtproxy run`, which
// found the worktree's registration (the refused server's)
const e2eRunRefused = `[WebServer] wtproxy: /tmp/wt-a is already served on front :8000 by pid 0 (no command), registered 5s ago, uid 0
[WebServer] wtproxy: remove it first: wtproxy unregister --worktree /tmp/wt-a --front 8000

Error: Process from config.webServer was not able to start. Exit code: 1
`;

const e2eNoStart = `
Error: Process from config.webServer was not able to start. Exit code: 1
`;

test('a correct branch: right when it passes, a false red otherwise', () => {
  assert.equal(classify('a', 'django', { code: 0, out: djangoOk }).verdict, 'right');
  assert.equal(classify('a', 'django', { code: 2, out: djangoNoDb }).verdict, 'false red');
  assert.match(classify('a', 'django', { code: 2, out: djangoNoDb }).why, /duplicate key value/);
  assert.equal(classify('b', 'e2e', { code: 0, out: e2eOk }).verdict, 'right');
  const wrong = classify('a', 'e2e', { code: 1, out: e2eWrongServer });
  assert.equal(wrong.verdict, 'false red');
  assert.equal(wrong.why, '#line-apple .note: expected "bulk −10%", not found');
  assert.equal(classify('a', 'e2e', { code: 1, out: e2eNoStart }).verdict, 'false red');
});

test('the buggy branch: right only when it fails on its bug and nothing else', () => {
  assert.equal(classify('c', 'django', { code: 1, out: djangoBug }).verdict, 'right');
  assert.equal(classify('c', 'e2e', { code: 1, out: e2eBug }).verdict, 'right');
  assert.equal(classify('c', 'django', { code: 0, out: djangoOk }).verdict, 'false green');
  assert.equal(classify('c', 'e2e', { code: 0, out: e2eOk }).verdict, 'false green');
  assert.equal(classify('c', 'django', { code: 2, out: djangoNoDb }).verdict, 'wrong reason');
  assert.equal(classify('c', 'django', { code: 1, out: djangoBugThenTeardown }).verdict, 'wrong reason');
  assert.equal(classify('c', 'django', { code: 1, out: djangoOtherFailure }).verdict, 'wrong reason');
  assert.equal(classify('c', 'e2e', { code: 1, out: e2eServerGone }).verdict, 'wrong reason');
  assert.equal(classify('c', 'e2e', { code: 1, out: e2eNoStart }).verdict, 'wrong reason');
  // failing the bug's test on another value is not the bug
  assert.equal(classify('c', 'e2e', { code: 1, out: e2eBug.replace('"$3.70"', '"$12.00"') }).verdict, 'wrong reason');
});

test('a wtproxy refusal is its own verdict, naming the reason', () => {
  for (const branch of ['a', 'c']) {
    const v = classify(branch, 'e2e', { code: 1, out: e2eRefused });
    assert.equal(v.verdict, 'refused');
    assert.equal(v.why, 'X-Wtproxy-Refused: checkout-mismatch');
    const run = classify(branch, 'e2e', { code: 1, out: e2eRunRefused });
    assert.equal(run.verdict, 'refused');
    assert.match(run.why, /^wtproxy: \/tmp\/wt-a is already served on front :8000/);
  }
});
