"""A small WebShop data directory in WebShop's original schema, written by tests."""

from __future__ import annotations

import json
from pathlib import Path

PRODUCTS = [
    {"asin": "B00SKI0001", "category": "fashion", "query": "men's ski pants",
     "name": "Northpeak Men's Waterproof Ski Pants Insulated Snow Trousers",
     "full_description": "Insulated snow pants for skiing and snowboarding.",
     "pricing": "$45.99", "images": [], "average_rating": 4.4, "total_reviews": 12,
     "product_category": "Clothing, Shoes & Jewelry › Men › Clothing › Active › Active Pants",
     "small_description": ["Waterproof shell", "Machine wash cold"],
     "customization_options": {"Color": [{"value": "Black", "image": None}, {"value": "Navy Blue", "image": None}],
                               "Size": [{"value": "Medium", "image": None}, {"value": "Large", "image": None}]},
     "reviews": [{"score": 5, "title": "Warm", "body": "Kept me dry all day."}]},
    {"asin": "B00SKI0002", "category": "fashion", "query": "men's ski pants",
     "name": "Alpenlow Men's Ski Pants Softshell Windproof Trousers",
     "full_description": "Softshell trousers.", "pricing": "$30.00 - $38.00", "images": [],
     "average_rating": None, "product_category": "Clothing, Shoes & Jewelry › Men › Clothing › Active › Active Pants",
     "small_description": ["Windproof softshell"],
     "customization_options": {"Color": [{"value": "Gray", "image": None}],
                               "Size": [{"value": "Large", "image": None}]}},
    {"asin": "B00LIP0003", "category": "beauty", "query": "lipstick",
     "name": "Rouge Atelier Matte Lipstick Long Lasting Lip Color",
     "full_description": "A cruelty free matte lipstick.", "pricing": "$12.50", "images": [],
     "average_rating": 4.1, "product_category": "Beauty & Personal Care › Makeup › Lips › Lipstick",
     "small_description": ["Long lasting wear", "Vitamin E"],
     "customization_options": {"Color": [{"value": "Ruby Red", "image": None}, {"value": "Nude", "image": None}]}},
]
ATTRIBUTES = {"B00SKI0001": {"attributes": ["waterproof", "machine wash", "insulated"]},
              "B00SKI0002": {"attributes": ["windproof", "machine wash"]},
              "B00LIP0003": {"attributes": ["long lasting", "cruelty free"]}}
HUMAN_INSTRUCTIONS = {
    "B00SKI0001": [{"asin": "B00SKI0001", "instruction": "i need waterproof men's ski pants in black, size large.",
                    "instruction_attributes": ["waterproof"], "instruction_options": ["black", "large"]},
                   {"asin": "B00SKI0001", "instruction": "men's ski pants", "instruction_attributes": [],
                    "instruction_options": []}],
    "B00LIP0003": [{"asin": "B00LIP0003", "instruction": "i want a long lasting lipstick in ruby red",
                    "instruction_attributes": ["long lasting"], "instruction_options": ["ruby red"]}],
}


def write_original_data(directory: Path) -> Path:
    """``items_shuffle_1000.json``, ``items_ins_v2_1000.json`` and ``items_human_ins.json`` in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "items_shuffle_1000.json").write_text(json.dumps(PRODUCTS))
    (directory / "items_ins_v2_1000.json").write_text(json.dumps(ATTRIBUTES))
    (directory / "items_human_ins.json").write_text(json.dumps(HUMAN_INSTRUCTIONS))
    return directory
