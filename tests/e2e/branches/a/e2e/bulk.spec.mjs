// bulk.spec.mjs - branch a: ten or more of a product get 10% off that line.
import { test, expect } from '@playwright/test';
import { open } from './open.mjs';

test('ten apples get the bulk discount', async ({ page }) => {
  await open(page, '/basket/?apple=10');
  await expect(page.locator('#line-apple .note')).toHaveText('bulk −10%');
  await expect(page.locator('#total')).toHaveText('$10.80');
});
