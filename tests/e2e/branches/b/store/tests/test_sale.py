from decimal import Decimal

from django.test import TestCase

from store import pricing
from store.models import Product


class SaleTests(TestCase):
    def test_pear_is_on_sale(self):
        row = pricing.offer(Product.objects.get(slug='pear'))
        self.assertEqual((row['price'], row['badge']), (Decimal('0.80'), 'Sale'))

    def test_basket_uses_the_sale_price(self):
        lines, total = pricing.basket({'pear': 5, 'apple': 1})
        self.assertEqual(total, Decimal('5.20'))

    def test_shop_page_shows_the_badge(self):
        page = self.client.get('/').content.decode()
        self.assertIn('<span class="badge">Sale</span>', page)
