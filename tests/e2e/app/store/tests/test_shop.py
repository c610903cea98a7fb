from decimal import Decimal

from django.test import TestCase

from store import pricing


class ShopTests(TestCase):
    def test_index_lists_products(self):
        page = self.client.get('/').content.decode()
        self.assertIn('<td class="price">$1.20</td>', page)
        self.assertIn('<td class="price">$2.50</td>', page)

    def test_basket_total_counts_quantities(self):
        lines, total = pricing.basket({'apple': 3, 'bread': 1})
        self.assertEqual([ln.total for ln in lines], [Decimal('3.60'), Decimal('2.50')])
        self.assertEqual(total, Decimal('6.10'))

    def test_basket_leaves_out_unknown_and_zero(self):
        lines, total = pricing.basket({'apple': 0, 'caviar': 2, 'bread': 2})
        self.assertEqual([ln.product.slug for ln in lines], ['bread'])
        self.assertEqual(total, Decimal('5.00'))

    def test_basket_page(self):
        page = self.client.get('/basket/?apple=3&bread=1').content.decode()
        self.assertIn('<strong id="total">$6.10</strong>', page)
