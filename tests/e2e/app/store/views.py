from django.shortcuts import render

from . import pricing
from .models import Product


def index(request):
    rows = [pricing.offer(p) for p in Product.objects.all()]
    return render(request, 'store/index.html', {'rows': rows})


def basket(request):
    """/basket/?apple=3&bread=1: the lines and the total of that basket."""
    items = {slug: int(q) for slug, q in request.GET.items() if q.isdigit()}
    lines, total = pricing.basket(items)
    return render(request, 'store/basket.html', {'lines': lines, 'total': total})
