"""The shop's catalogue, in the dev database and in every test database."""
from decimal import Decimal

from django.db import migrations

PRODUCTS = [
    ('apple', 'Apple', '1.20'),
    ('bread', 'Bread', '2.50'),
    ('cheese', 'Cheese', '4.75'),
    ('pear', 'Pear', '1.00'),
]


def add(apps, schema_editor):
    Product = apps.get_model('store', 'Product')
    for slug, name, price in PRODUCTS:
        Product.objects.create(slug=slug, name=name, price=Decimal(price))


def remove(apps, schema_editor):
    apps.get_model('store', 'Product').objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [('store', '0001_initial')]
    operations = [migrations.RunPython(add, remove)]
