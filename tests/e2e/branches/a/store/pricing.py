"""What things cost: a product's offer on the shop page, a basket's lines
and its total. Amounts are Decimals rounded to the cent."""
from dataclasses import dataclass
from decimal import Decimal

from .models import Product

CENT = Decimal('0.01')
# Ten or more of one product: 10% off that line.
BULK_QUANTITY = 10
BULK_DISCOUNT = Decimal('0.10')


@dataclass
class Line:
    product: Product
    quantity: int
    unit_price: Decimal
    total: Decimal
    note: str = ''


def offer(product):
    """The shop page's row for product: the price it sells at now and a
    badge ('' for none)."""
    return {'product': product, 'price': product.price, 'badge': ''}


def line(product, quantity):
    price = offer(product)['price']
    total = price * quantity
    if quantity >= BULK_QUANTITY:
        total = total * (1 - BULK_DISCOUNT)
        return Line(product, quantity, price, total.quantize(CENT), 'bulk −10%')
    return Line(product, quantity, price, total.quantize(CENT))


def basket(items):
    """items: {slug: quantity}. Returns (lines, total); unknown products and
    quantities below 1 are left out."""
    products = Product.objects.filter(slug__in=list(items))
    lines = [line(p, items[p.slug]) for p in products if items[p.slug] >= 1]
    total = sum((ln.total for ln in lines), Decimal('0.00'))
    return lines, total
