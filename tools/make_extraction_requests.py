#!/usr/bin/env python3
"""Writes N extraction requests (JSONL for `staticlm batch`): a short text
about a person, a product or an event, and the JSON Schema of what to pull out
of it (three schemas, in turn). Deterministic: the same N gives the same file.

    tools/make_extraction_requests.py 100 > requests.jsonl
"""
import json
import random
import sys

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40},
        "age": {"type": "integer"},
        "city": {"type": "string", "maxLength": 40},
        "email": {"anyOf": [{"type": "string", "maxLength": 60}, {"type": "null"}]},
        "languages": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 4},
        "employed": {"type": "boolean"},
    },
    "required": ["name", "age", "city", "employed"],
    "additionalProperties": False,
}
PRODUCT = {
    "type": "object",
    "properties": {
        "product": {"type": "string", "minLength": 1, "maxLength": 40},
        "price": {"type": "number"},
        "currency": {"enum": ["USD", "EUR", "GBP"]},
        "in_stock": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 16}, "minItems": 1, "maxItems": 3},
    },
    "required": ["product", "price", "currency", "in_stock", "tags"],
    "additionalProperties": False,
}
EVENT = {
    "type": "object",
    "properties": {
        "event": {"type": "string", "maxLength": 40},
        "year": {"type": "integer"},
        "kind": {"enum": ["concert", "conference", "match", "festival"]},
        "attendees": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "outdoor": {"type": "boolean"},
    },
    "required": ["event", "year", "kind", "outdoor"],
    "additionalProperties": False,
}

FIRST = ["Maria", "John", "Aiko", "Lars", "Fatima", "Pedro", "Chen", "Olga", "Samuel", "Nina"]
LAST = ["Lopez", "Smith", "Tanaka", "Berg", "Haddad", "Silva", "Wei", "Ivanova", "Okafor", "Rossi"]
CITIES = ["Madrid", "Boston", "Osaka", "Oslo", "Cairo", "Lisbon", "Shanghai", "Kyiv", "Lagos", "Rome"]
LANGS = ["English", "Spanish", "Japanese", "Norwegian", "Arabic", "Portuguese", "Chinese", "Ukrainian", "French"]
PRODUCTS = ["steel water bottle", "wireless mouse", "hiking boots", "desk lamp", "coffee grinder", "yoga mat"]
EVENTS = [("Rock in the Park", "concert", True), ("PyData Summit", "conference", False),
          ("City Derby", "match", True), ("Lantern Festival", "festival", True), ("Jazz Night", "concert", False)]


def person(rng):
    name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    age, city = rng.randint(19, 80), rng.choice(CITIES)
    langs = rng.sample(LANGS, rng.randint(1, 3))
    job = rng.choice(["works as a nurse", "is retired", "works as an engineer", "is looking for a job"])
    email = f" Her email is {name.split()[0].lower()}@example.com." if rng.random() < 0.5 else ""
    return f"{name} is {age} years old, lives in {city}, speaks {' and '.join(langs)} and {job}.{email}", PERSON


def product(rng):
    p = rng.choice(PRODUCTS)
    price, cur = round(rng.uniform(5, 300), 2), rng.choice(["USD", "EUR", "GBP"])
    stock = rng.choice(["is in stock", "is sold out"])
    return f"The {p} costs {price} {cur} and {stock}. Customers call it durable and light.", PRODUCT


def event(rng):
    name, kind, outdoor = rng.choice(EVENTS)
    year, people = rng.randint(1990, 2026), rng.randint(100, 90000)
    place = "outdoors in a park" if outdoor else "in an indoor hall"
    return f"{name} took place in {year} {place}; about {people} people came.", EVENT


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    rng = random.Random(29)
    for i in range(n):
        text, schema = (person, product, event)[i % 3](rng)
        prompt = f"Extract the facts of the text as JSON.\nText: {text}\nJSON: "
        print(json.dumps({"id": f"x{i:03d}", "prompt": prompt, "n_predict": 256, "json_schema": schema}))


if __name__ == "__main__":
    main()
