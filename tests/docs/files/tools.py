"""The tools.py the docs' examples name: `--functions tools.py` makes each public function a tool."""


def get_weather(city: str) -> dict:  # City name, e.g. "Paris"
    "Current weather for a city."
    return {"city": city, "temp_c": {"Paris": 21.5, "Rome": 27.0}.get(city, 15.0)}


def lookup_order(order_id: int) -> dict:
    "The order with this id, from the shop's database."
    return {"id": order_id, "total": 9.5}


def refund(order_id: int, amount: float) -> dict:
    "Refund an order (the docs mark it --approve-later: a person decides)."
    return {"order_id": order_id, "refunded": amount}
