// shop.spec.mjs - the shop page and the basket, as a customer sees them.
import { test, expect } from '@playwright/test';
import { open } from './open.mjs';

test('the shop lists its products', async ({ page }) => {
  await open(page, '/');
  await expect(page.locator('h1')).toHaveText('Shop');
  await expect(page.locator('#product-apple .price')).toHaveText('$1.20');
  await expect(page.locator('#product-bread .price')).toHaveText('$2.50');
});

test('basket total counts quantities', async ({ page }) => {
  await open(page, '/basket/?apple=3&bread=1');
  await expect(page.locator('#line-apple .line-total')).toHaveText('$3.60');
  await expect(page.locator('#total')).toHaveText('$6.10');
});
