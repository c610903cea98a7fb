from decimal import Decimal

from django.test import TestCase

from store import pricing


class BulkDiscountTests(TestCase):
    def test_ten_of_a_product_get_ten_percent_off(self):
        lines, total = pricing.basket({'apple': 10})
        self.assertEqual(lines[0].note, 'bulk −10%')
        self.assertEqual(total, Decimal('10.80'))

    def test_five_pay_full_price(self):
        lines, total = pricing.basket({'apple': 5})
        self.assertEqual(lines[0].note, '')
        self.assertEqual(total, Decimal('6.00'))
