"""Shipping rates: the function the covered-code-elimination tests target."""

from .zones import surcharge

FREE_LIMIT = 10_000


def quote(weight, zone, express=False, coupon=None):
    """The price of a parcel in cents."""
    if weight <= 0:
        raise ValueError("weight must be positive")
    if zone == "local":
        price = 500 + weight * 30
        if express:
            price *= 2
        return price
    elif zone == "national":
        price = 900 + weight * 40
        if weight > 20:
            price += 400
        if coupon == "HALF":
            price //= 2
        return price
    elif zone == "international":
        price = 2500 + surcharge(zone) + weight * 90
        if weight > 20:
            price += 1500
        elif weight > 5:
            price += 600
        if express:
            price = price * 2 + 1000
        if coupon:
            if coupon.startswith("MINUS"):
                price -= int(coupon[5:])
            else:
                raise ValueError("unknown coupon")
        return min(price, FREE_LIMIT)
    raise KeyError(zone)
