// sale.spec.mjs - branch b: pears are on sale, 20% off, with a badge.
import { test, expect } from '@playwright/test';
import { open } from './open.mjs';

test('pears are on sale', async ({ page }) => {
  await open(page, '/');
  await expect(page.locator('#product-pear .badge')).toHaveText('Sale');
  await expect(page.locator('#product-pear .price')).toHaveText('$0.80');
});
