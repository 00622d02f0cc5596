"""Generate the bundled WebShop dataset: a synthetic Amazon-style catalogue and shopping goals.

    python scripts/make_webshop_data.py [--seed 0] [--out agentgym/data/webshop]

Writes WebShop's own files (Yao et al., 2022): ``items_shuffle.json.gz`` (products),
``items_ins_v2.json`` (each product's attributes) and ``goals.json`` (resolved goals
with a train/test split). Products come from the hand-written taxonomy below: five
categories of about 20 product types, each with a search query, an Amazon-style
category breadcrumb, a pool of attributes, option types with value pools, a price
range and title / bullet / description material; brands are invented. Every type has
11 to 15 products that share attributes and option values, so a wrong product of
the right type earns partial credit under WebShop's reward. A product's text mentions
none of its type's attributes that it lacks, and within a type no two attributes or
option values are fuzzy matches of each other (the reward's token-set ratio > 85), so
the reward's fuzzy matching agrees with exact matching. Everything is checked before
anything is written; the same seed gives byte-identical files on every machine and
under any ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import random
import re
import string
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

PRICE_RANGE = [10.0 * i for i in range(1, 100)]  # WebShop's budget grid (web_agent_site/engine/goal.py)
PRODUCTS_PER_TYPE = (11, 15)
TEST_SHARE = 0.2  # of target products; all goals of one product land in one split
EXTRA_GOAL_SHARE = 0.2  # products that get a second goal
NO_OPTIONS_SHARE = 0.15
RANGE_PRICE_SHARE = 0.25
FUZZY_THRESHOLD = 85  # WebShop matches attributes and options when token_set_ratio > 85
MIN_PRODUCTS, MIN_GOALS, MIN_TEST_GOALS = 1200, 1000, 200
CATEGORIES = ("beauty", "food", "fashion", "furniture", "electronics")


@dataclass(frozen=True)
class ProductType:
    """One product type of the taxonomy: everything its products are drawn from."""

    query: str  # WebShop's search query, lowercase
    crumb: str  # product_category, levels joined with " › "
    price: tuple[float, float]  # dollars: the range a product's (lowest) price is drawn from
    heads: tuple[str, ...]  # title nouns
    attrs: tuple[str, ...]  # the attribute pool
    options: dict[str, tuple[str, ...]]  # option type -> value pool, lowercase
    extras: tuple[str, ...]  # title endings
    feats: tuple[str, ...]  # bullet points that name no attribute
    uses: tuple[str, ...]  # what it is for, in descriptions and reviews
    mass: bool = False  # "i need olive oil", not "i need a olive oil"
    category: str = ""  # filled in from TAXONOMY


def T(query, crumb, price, heads, attrs, options, extras, feats, uses, *, mass=False) -> ProductType:
    """A taxonomy row; the "a|b|c" strings are pools."""
    def pool(text: str) -> tuple[str, ...]:
        return tuple(p.strip() for p in text.split("|"))
    return ProductType(query, crumb, price, pool(heads), pool(attrs), {k: pool(v) for k, v in options.items()},
                       pool(extras), pool(feats), pool(uses), mass)


PACKS = "1 pack|2 pack|3 pack|4 pack|6 pack"
SETS = "set of two|set of three|set of four"
APPAREL = "xs|small|medium|large|xl|xxl"
MEN_SHOES = "7|8|9|10|11|12|13"
WOMEN_SHOES = "5|6|7|8|9|10|11"
TIERS = "3 tier|4 tier|5 tier|6 tier"
WOOD = "black|white|espresso|walnut|natural oak|gray|rustic brown|cherry"
FABRIC = "beige|dark gray|navy blue|emerald green|blush pink|cream|charcoal|mustard yellow"
TECH = "black|white|silver|space gray|rose gold|green"

# ================================================================ taxonomy
BEAUTY = (
    T("shampoo", "Beauty & Personal Care › Hair Care › Shampoo & Conditioner › Shampoos", (7, 34),
      "Shampoo|Daily Shampoo|Clarifying Shampoo|Hydrating Shampoo",
      "sulfate free|paraben free|cruelty free|dry hair|color treated hair|hair growth|natural ingredients|tea tree|"
      "damaged hair|fine hair",
      {"scent": "lavender|coconut|citrus|eucalyptus|unscented|rosemary mint", "size": "8 fl oz|16 fl oz|32 fl oz",
       "item package quantity": PACKS},
      "for Men and Women|Salon Formula|Gentle Daily Hair Wash|Volumizing Formula",
      "Rich lather that rinses clean without residue|Safe for everyday use on all hair types|"
      "Recyclable bottle with an easy flip cap|Light, fresh fragrance that stays with you",
      "everyday washing|a salon feel at home|oily roots and frizzy ends", mass=True),
    T("hair extensions", "Beauty & Personal Care › Hair Care › Hair Extensions, Wigs & Accessories › Hair Extensions",
      (15, 120), "Clip in Hair Extensions|Tape in Hair Extensions|Halo Hair Extensions",
      "human hair|high quality|natural looking|easy apply|double weft|long lasting|heat resistant|tangle free",
      {"color": "jet black|dark brown|chestnut|auburn|ash blonde|platinum blonde",
       "size": "16 inch|20 inch"},
      "7 Pieces Full Head Set|Silky Straight Remy Hair|for Women",
      "Can be curled, straightened and dyed like your own hair|Secure clips hold firmly all day|"
      "Comes with a storage bag and a comb|Each set is hand checked before shipping",
      "adding length and volume|weddings and special occasions|everyday styling"),
    T("lipstick", "Beauty & Personal Care › Makeup › Lips › Lipstick", (6, 38),
      "Matte Lipstick|Liquid Lipstick|Creamy Lipstick|Lip Color",
      "long lasting|cruelty free|matte finish|waterproof|vegan|moisturizing|paraben free|high pigment",
      {"color": "ruby red|nude|berry wine|coral|mauve|plum|classic pink", "item package quantity": PACKS},
      "Velvet Lip Makeup|Lip Makeup Gift for Women|Bold Lip Stain",
      "Smooth application in one swipe|Slim bullet that fits in any purse|Buildable color from sheer to bold|"
      "Dermatologist tested",
      "everyday wear|date nights and parties|a bold office look"),
    T("nail polish", "Beauty & Personal Care › Foot, Hand & Nail Care › Nail Art & Polish › Nail Polish", (4, 30),
      "Nail Polish|Gel Nail Polish|Nail Lacquer",
      "long lasting|quick dry|non toxic|cruelty free|chip resistant|high gloss|vegan|easy apply",
      {"color": "cherry red|baby pink|lilac|midnight black|nude|glitter gold|mint green|sky blue",
       "item package quantity": PACKS},
      "Salon Manicure at Home|Gel Effect Nail Color|No Lamp Needed",
      "Wide brush for even coverage|Goes on smooth in two thin coats|Removes easily with regular polish remover|"
      "Made without formaldehyde or toluene",
      "at-home manicures|pedicures|nail art"),
    T("eye shadow palette", "Beauty & Personal Care › Makeup › Eyes › Eyeshadow", (8, 45),
      "Eyeshadow Palette|Eye Shadow Palette|Eye Makeup Palette",
      "long lasting|high pigment|cruelty free|matte finish|shimmer shades|easy blend|vegan|waterproof",
      {"style": "warm nudes|smoky night|sunset glow|berry crush|cool tones|desert dusk",
       "item package quantity": PACKS},
      "35 Shade Pro Palette|Makeup Gift Set|with Mirror",
      "Buttery powder that builds without fallout|Includes a large mirror and a dual ended brush|"
      "Slim case that slips into a makeup bag|Works over primer or on bare lids",
      "everyday looks|dramatic evening makeup|weddings and photo shoots"),
    T("face moisturizer", "Beauty & Personal Care › Skin Care › Face › Creams & Moisturizers › Face Moisturizers",
      (9, 55), "Face Moisturizer|Daily Face Cream|Hydrating Face Lotion",
      "sensitive skin|dry skin|fragrance free|hyaluronic acid|anti aging|oil free|non comedogenic|cruelty free|"
      "natural ingredients|spf 30",
      {"size": "1.7 fl oz|2.5 fl oz|4 fl oz", "item package quantity": PACKS},
      "for Women and Men|Day and Night Cream|Dermatologist Recommended",
      "Absorbs quickly without a greasy feel|Dermatologist tested|Airless pump keeps the formula fresh|"
      "Works well under makeup",
      "morning and night routines|winter dryness|a simple skincare routine"),
    T("liquid foundation", "Beauty & Personal Care › Makeup › Face › Foundation", (8, 48),
      "Liquid Foundation|Foundation Makeup|Liquid Face Foundation",
      "full coverage|long lasting|oil free|matte finish|natural finish|cruelty free|lightweight|sensitive skin|"
      "waterproof|spf 30",
      {"color": "porcelain|fair ivory|light beige|warm sand|natural tan|golden honey|deep caramel|espresso",
       "size": "0.5 fl oz|1 fl oz"},
      "Foundation for All Skin Types|Buildable Face Makeup|Medium to Full Coverage Formula",
      "Buildable coverage that evens out skin tone|Blurs the look of pores|Pump bottle for precise application|"
      "Available in shades for every skin tone",
      "all day wear|photos and special events|a polished everyday look"),
    T("mascara", "Beauty & Personal Care › Makeup › Eyes › Mascara", (5, 28),
      "Mascara|Volumizing Mascara|Lengthening Mascara|Lash Mascara",
      "waterproof|long lasting|cruelty free|smudge proof|clump free|vegan|sensitive eyes|paraben free",
      {"color": "black|dark brown|midnight blue", "item package quantity": PACKS},
      "Lash Lifting Formula|Volume and Length Eye Makeup|Curling Mascara Wand",
      "Curved brush lifts and separates every lash|Builds volume without flaking|"
      "Removes easily with makeup remover|Ophthalmologist tested",
      "everyday wear|dramatic evening looks|long work days"),
    T("hair dryer", "Beauty & Personal Care › Hair Care › Styling Tools & Appliances › Hair Dryers", (19, 120),
      "Hair Dryer|Ionic Hair Dryer|Blow Dryer|Professional Hair Dryer",
      "negative ions|fast drying|lightweight|low noise|foldable handle|frizz free|diffuser attachment|cool shot button",
      {"color": "black|white|rose gold|pink|purple", "style": "compact|professional|salon pro"},
      "1875W Blow Dryer|with Concentrator Nozzle|3 Heat Settings and 2 Speeds",
      "Concentrator nozzle for smooth, focused airflow|Removable rear filter cleans in seconds|"
      "Long swivel power cord|Hanging loop for easy storage",
      "quick morning styling|thick and curly hair|travel and the gym"),
    T("sunscreen", "Beauty & Personal Care › Skin Care › Sunscreens & Tanning Products › Sunscreens", (7, 35),
      "Sunscreen Lotion|Mineral Sunscreen|Sport Sunscreen|Daily Sunscreen",
      "spf 50|water resistant|reef safe|broad spectrum|sensitive skin|oil free|fragrance free|zinc oxide|non greasy",
      {"size": "3 fl oz|6.7 fl oz|10 fl oz", "item package quantity": PACKS},
      "Face and Body Sun Protection|Family Size|UVA and UVB Protection",
      "Rubs in clear with no white cast|Dermatologist tested|Safe for the whole family|Travel friendly tube",
      "beach days|outdoor sports|daily sun protection", mass=True),
    T("body wash", "Beauty & Personal Care › Skin Care › Body › Cleansers › Body Washes", (5, 25),
      "Body Wash|Moisturizing Body Wash|Shower Gel|Creamy Body Wash",
      "sulfate free|paraben free|dry skin|natural ingredients|cruelty free|sensitive skin|shea butter|vegan",
      {"scent": "lavender|coconut|eucalyptus|cucumber melon|vanilla|oatmeal", "size": "16 fl oz|20 fl oz|33.8 fl oz",
       "item package quantity": PACKS},
      "for Women and Men|Gentle Daily Cleanser|Nourishing Shower Gel",
      "Rich lather that rinses clean|pH balanced formula|Leaves skin soft and smooth|Pump bottle for easy use",
      "daily showers|after the gym|a relaxing evening bath", mass=True),
    T("eau de parfum", "Beauty & Personal Care › Fragrance › Women's › Eau de Parfum", (25, 140),
      "Eau de Parfum Spray|Perfume for Women|Eau de Parfum",
      "long lasting|travel size|floral notes|woody notes|fresh citrus|paraben free|cruelty free|gift box",
      {"scent": "velvet rose|amber vanilla|citrus blossom|midnight jasmine|sea breeze",
       "size": "0.33 fl oz|1.7 fl oz|3.4 fl oz"},
      "Fragrance for Women|Signature Scent Spray|Elegant Glass Bottle",
      "Top notes open bright and settle into a warm base|Elegant glass bottle with a fine mist sprayer|"
      "A signature scent from day to night|Blended by perfumers in France",
      "date nights|everyday wear|birthdays and anniversaries", mass=True),
    T("beard oil", "Beauty & Personal Care › Shaving & Hair Removal › Men's › Beard & Mustache Care › Beard Oils",
      (8, 30), "Beard Oil|Beard Oil Conditioner|Beard Softening Oil",
      "natural ingredients|beard growth|argan oil|jojoba oil|non greasy|itch relief|cruelty free|made in usa",
      {"scent": "sandalwood|cedarwood|bay rum|citrus|pine forest|unscented", "size": "1 fl oz|3.4 fl oz",
       "item package quantity": PACKS},
      "for Men|Leave in Beard Conditioner|Beard Care Gift",
      "Glass dropper bottle for precise use|A few drops tame the whole beard|Softens coarse whiskers|"
      "Absorbs quickly into skin and hair",
      "daily grooming|a short stubble or a full beard|dry winter months", mass=True),
    T("makeup brush set", "Beauty & Personal Care › Tools & Accessories › Makeup Brushes & Tools › Brush Sets", (8, 45),
      "Makeup Brush Set|Makeup Brushes|Professional Brush Kit",
      "synthetic bristles|soft bristles|cruelty free|travel case|easy clean|high quality|vegan|wooden handles",
      {"color": "black|rose gold|white marble|champagne", "size": "6 pcs|10 pcs|24 pcs"},
      "Foundation Powder Blush Eyeshadow Brushes|Kabuki Brush Kit|Makeup Gift Set",
      "Brushes for foundation, powder, blush and eyes|Dense heads blend without streaks|"
      "Shed free bristles hold their shape|Each brush is labeled by use",
      "everyday makeup|professional artists and beginners|travel and touch ups"),
    T("vitamin c serum", "Beauty & Personal Care › Skin Care › Face › Serums", (9, 45),
      "Vitamin C Serum|Face Serum|Brightening Serum",
      "hyaluronic acid|anti aging|dark spots|fine lines|fragrance free|cruelty free|vegan|natural ingredients|"
      "sensitive skin",
      {"size": "0.5 fl oz|1 fl oz|3.4 fl oz", "item package quantity": PACKS},
      "for Face|Vitamin E and Ferulic Acid|Dermatologist Recommended",
      "Glass dropper bottle protects the formula from light|Absorbs in seconds|Layers well under moisturizer|"
      "Made in small batches",
      "a morning skincare routine|dull skin|uneven skin tone"),
    T("flat iron", "Beauty & Personal Care › Hair Care › Styling Tools & Appliances › Flat Irons", (19, 110),
      "Hair Straightener Flat Iron|Flat Iron|Hair Straightener",
      "ceramic plates|titanium plates|adjustable temperature|auto shut off|dual voltage|fast heating|frizz free|"
      "lcd display",
      {"color": "black|pink|purple|rose gold|white", "size": "0.5 inch|1 inch|2 inch"},
      "2 in 1 Straightener and Curler|Professional Salon Styler|for All Hair Types",
      "Floating plates glide without snagging|Long swivel cord|Heat resistant travel pouch included|"
      "Ready to style in under a minute",
      "sleek straight styles|loose waves|touch ups on the go"),
    T("false eyelashes", "Beauty & Personal Care › Makeup › Eyes › False Eyelashes & Adhesives › False Eyelashes",
      (5, 25), "False Eyelashes|Mink Lashes|Strip Lashes|Fluffy Lashes",
      "natural looking|reusable|faux mink|easy apply|cruelty free|lightweight|handmade|dramatic volume",
      {"style": "wispy|cat eye|doll eye|natural round", "size": "5 pairs|10 pairs|24 pairs"},
      "3D Lash Pack|Fake Eyelashes Set|with Lash Glue",
      "Flexible cotton band bends to fit the lash line|Trim to fit any eye shape|Comes in a clear storage tray|"
      "Pairs well with lash glue or magnetic liner",
      "weddings and parties|photo shoots|everyday glam"),
    T("sheet face mask", "Beauty & Personal Care › Skin Care › Face › Treatments & Masks › Masks", (6, 30),
      "Sheet Face Mask|Hydrating Sheet Masks|Facial Sheet Mask",
      "hyaluronic acid|dry skin|sensitive skin|natural ingredients|cruelty free|collagen|soothing|korean skincare",
      {"style": "aloe vera|green tea|honey|rice|charcoal|snail", "size": "5 count|10 count|24 count"},
      "Skin Care Mask Pack|Facial Treatment Set|Spa Day Gift",
      "Soft sheet hugs the contours of the face|Soaked in a generous amount of essence|"
      "Use two to three times a week|Individually sealed pouches",
      "a relaxing spa night|skin that feels tired|before a big event"),
    T("natural deodorant", "Beauty & Personal Care › Personal Care › Deodorants & Antiperspirants › Deodorants",
      (6, 24), "Natural Deodorant|Deodorant Stick|Deodorant for Women and Men",
      "aluminum free|baking soda free|long lasting|sensitive skin|vegan|cruelty free|paraben free|"
      "natural ingredients",
      {"scent": "lavender|coconut|eucalyptus|unscented|cedar|citrus", "item package quantity": PACKS},
      "Odor Protection Stick|Clean Deodorant|Plastic Free Packaging",
      "Glides on smooth and dries fast|Keeps you fresh from morning to night|Won't stain clothes|"
      "Recyclable paper tube",
      "everyday wear|workouts|hot summer days"),
    T("lace front wig", "Beauty & Personal Care › Hair Care › Hair Extensions, Wigs & Accessories › Wigs", (35, 260),
      "Lace Front Wig|Human Hair Wig|Lace Front Wig for Women",
      "human hair|pre plucked|glueless|natural hairline|heat resistant|high density|bleached knots|baby hair",
      {"color": "natural black|jet black|honey blonde|burgundy|ombre brown", "size": "18 inch|24 inch|30 inch",
       "style": "body wave|straight|deep wave|kinky curly"},
      "13x4 HD Lace|180% Density|for Black Women",
      "Adjustable straps and combs for a secure fit|Breathable cap for all day comfort|"
      "Can be dyed, curled and straightened|Ships in a gift box",
      "everyday wear|protective styling|parties and photo shoots"),
)

FOOD = (
    T("coffee beans", "Grocery & Gourmet Food › Beverages › Coffee, Tea & Cocoa › Coffee › Whole Coffee Beans",
      (9, 45), "Whole Bean Coffee|Coffee Beans|Whole Coffee Beans",
      "single origin|fair trade|usda organic|low acid|small batch|kosher|non gmo|freshly roasted",
      {"flavor name": "breakfast blend|french roast|colombian|hazelnut|vanilla|espresso",
       "size": "12 ounce|2 pound|40 ounce", "item package quantity": PACKS},
      "Medium Roast|Arabica Coffee|Roasted in Small Lots",
      "Sealed in a bag with a one way valve|Grind fresh for drip, pour over or French press|"
      "Notes of cocoa and toasted nuts|Packed right after roasting",
      "a morning cup|espresso drinks|the office coffee maker"),
    T("protein bars", "Grocery & Gourmet Food › Snack Foods › Bars › Protein Bars", (12, 45),
      "Protein Bars|High Protein Snack Bars|Protein Snack Bar",
      "gluten free|low sugar|keto friendly|non gmo|plant based|kosher|high fiber|soy free",
      {"flavor name": "chocolate peanut butter|cookie dough|birthday cake|chocolate chip|salted caramel|"
                      "mint chocolate",
       "size": "6 count|12 count|30 count"},
      "20g Protein|Healthy Snack Bars|Meal Replacement Bars",
      "20 grams of protein per bar|Individually wrapped for on the go|Chewy texture with real chunks|"
      "A satisfying snack between meals",
      "post workout snacks|busy mornings|lunch boxes"),
    T("herbal tea", "Grocery & Gourmet Food › Beverages › Coffee, Tea & Cocoa › Tea › Herbal", (5, 28),
      "Herbal Tea|Herbal Tea Bags|Loose Leaf Herbal Tea",
      "caffeine free|usda organic|non gmo|kosher|individually wrapped|better sleep|gluten free|compostable bags",
      {"flavor name": "chamomile|peppermint|lemon ginger|hibiscus|rooibos|lavender honey",
       "size": "16 count|20 count|48 count", "item package quantity": PACKS},
      "Tea Bags|Relaxing Herbal Infusion|Caffeine Free Blend",
      "Steep for five minutes in hot water|Delicious hot or iced|Whole herbs and flowers|"
      "Blended and packed in Oregon",
      "a calm evening|cold days|an afternoon break", mass=True),
    T("gluten free pasta", "Grocery & Gourmet Food › Pantry Staples › Pasta & Noodles › Pasta", (4, 28),
      "Gluten Free Pasta|Chickpea Pasta|Brown Rice Pasta",
      "non gmo|high protein|vegan|usda organic|kosher|low carb|plant based|dairy free",
      {"style": "penne|spaghetti|rotini|elbows|fusilli|lasagna", "size": "8 ounce|16 ounce|32 ounce",
       "item package quantity": PACKS},
      "Made from Legumes|Italian Style Noodles|Family Pack",
      "Cooks in about 8 minutes|Holds its shape and stays al dente|Pairs with any sauce|"
      "Made in a dedicated facility",
      "weeknight dinners|pasta salads|family meals", mass=True),
    T("dark chocolate", "Grocery & Gourmet Food › Candy & Chocolate › Chocolate › Chocolate Bars", (5, 35),
      "Dark Chocolate Bar|Dark Chocolate|Dark Chocolate Squares",
      "fair trade|usda organic|non gmo|vegan|low sugar|dairy free|kosher|gluten free|keto friendly",
      {"flavor name": "sea salt|almond|orange|raspberry|mint|espresso",
       "style": "72% cacao|85% cacao|90% cacao", "item package quantity": PACKS},
      "Premium Chocolate Bar|Gourmet Chocolate|Single Bar",
      "Smooth, rich cocoa flavor|Made with real cocoa butter|Snap apart squares for sharing|"
      "Crafted in small batches",
      "an after dinner treat|baking|gift baskets", mass=True),
    T("mixed nuts", "Grocery & Gourmet Food › Snack Foods › Nuts & Seeds › Mixed Nuts", (8, 40),
      "Mixed Nuts|Deluxe Mixed Nuts|Nut Mix",
      "lightly salted|unsalted|resealable bag|kosher|non gmo|keto friendly|high protein|gluten free|dry roasted|vegan",
      {"size": "1 pound|24 ounce|56 ounce", "style": "classic mix|deluxe mix|trail mix",
       "item package quantity": PACKS},
      "Cashews, Almonds, Pecans and Pistachios|Snack Nuts|Party Size",
      "A blend of cashews, almonds, pecans and pistachios|Roasted for a satisfying crunch|"
      "Great for sharing at parties|Packed fresh in California",
      "office snacking|road trips|holiday gatherings"),
    T("extra virgin olive oil",
      "Grocery & Gourmet Food › Pantry Staples › Cooking & Baking › Oils, Vinegars & Salad Dressings › Olive Oils",
      (9, 45), "Extra Virgin Olive Oil|Olive Oil|Premium Olive Oil",
      "cold pressed|single origin|usda organic|non gmo|kosher|high polyphenol|glass bottle|early harvest",
      {"size": "16.9 fl oz|25.5 fl oz|68 fl oz", "style": "greek|italian|spanish|california",
       "item package quantity": PACKS},
      "Imported|for Cooking and Salads|Robust Flavor",
      "Peppery finish with fruity notes|Great for salads, dipping and cooking|Harvest date on every bottle|"
      "Family owned groves",
      "salads and dipping|everyday cooking|roasting vegetables", mass=True),
    T("beef jerky", "Grocery & Gourmet Food › Snack Foods › Jerky & Dried Meats › Jerky › Beef", (7, 40),
      "Beef Jerky|Beef Jerky Snack|Premium Beef Jerky",
      "high protein|low sugar|gluten free|grass fed|keto friendly|no nitrates|resealable bag|low fat",
      {"flavor name": "original|teriyaki|peppered|sweet & spicy|hickory smoked|sriracha",
       "size": "2.85 ounce|8 ounce", "item package quantity": PACKS},
      "Meat Snack|Tender Sliced Jerky|Road Trip Snack",
      "Marinated and slow smoked|Tender strips, not tough|Made from whole cuts of beef|Ready to eat",
      "hiking and camping|road trips|a quick protein snack", mass=True),
    T("raw honey", "Grocery & Gourmet Food › Pantry Staples › Jams, Jellies & Sweet Spreads › Honey", (8, 40),
      "Raw Honey|Pure Raw Honey|Natural Honey",
      "unfiltered|usda organic|non gmo|kosher|glass jar|single origin|unpasteurized|gluten free",
      {"flavor name": "wildflower|clover|orange blossom|manuka|buckwheat|acacia",
       "size": "12 ounce|40 ounce|5 pound"},
      "Local Beekeepers|Pure Honey|Thick and Creamy",
      "Straight from the hive|Sweeten tea, yogurt and baking|Thick, spreadable texture|"
      "Crystallizes naturally over time",
      "tea and coffee|baking|morning toast", mass=True),
    T("granola", "Grocery & Gourmet Food › Breakfast Foods › Cereals › Granola", (4, 25),
      "Granola|Granola Clusters|Crunchy Granola",
      "gluten free|non gmo|low sugar|high protein|vegan|whole grain|usda organic|kosher|high fiber",
      {"flavor name": "honey almond|dark chocolate|maple pecan|blueberry|coconut cashew|cinnamon",
       "size": "11 ounce|24 ounce", "item package quantity": PACKS},
      "Breakfast Cereal|Oat Clusters|Healthy Snack",
      "Big crunchy clusters|Baked in small batches|Great with milk or yogurt|Resealable pouch",
      "breakfast bowls|yogurt parfaits|snacking on the go", mass=True),
    T("hot sauce", "Grocery & Gourmet Food › Condiments & Salad Dressings › Hot Sauce", (4, 28),
      "Hot Sauce|Pepper Sauce|Gourmet Hot Sauce",
      "small batch|gluten free|non gmo|vegan|no sugar added|all natural|kosher|keto friendly",
      {"flavor name": "habanero|chipotle|garlic|ghost pepper|jalapeno|verde", "size": "5 fl oz|10 fl oz",
       "item package quantity": PACKS},
      "Made with Fresh Peppers|Spicy Sauce|Gift for Hot Sauce Lovers",
      "Bright heat with real pepper flavor|Great on tacos, eggs and wings|Shake well before use|"
      "Handcrafted in Texas",
      "tacos and eggs|wings and barbecue|marinades", mass=True),
    T("sparkling water",
      "Grocery & Gourmet Food › Beverages › Bottled Beverages, Water & Drink Mixes › Water › Sparkling Water",
      (10, 35), "Sparkling Water|Flavored Sparkling Water|Sparkling Water Cans",
      "zero calorie|no sugar added|sodium free|caffeine free|non gmo|natural flavors|bpa free|kosher",
      {"flavor name": "lime|grapefruit|black cherry|lemon|mango|watermelon", "size": "12 fl oz|16.9 fl oz",
       "item package quantity": "8 pack|12 pack|30 pack"},
      "Seltzer Water|Fizzy Drink|Variety Pack",
      "Crisp bubbles and a clean finish|Best served chilled|Recyclable aluminum cans|A refreshing soda swap",
      "lunch boxes|parties|a refreshing afternoon drink", mass=True),
    T("popcorn", "Grocery & Gourmet Food › Snack Foods › Popcorn › Popped", (5, 30),
      "Popcorn|Ready to Eat Popcorn|Gourmet Popcorn",
      "gluten free|non gmo|whole grain|vegan|low calorie|kosher|dairy free|single serve|nut free",
      {"flavor name": "sea salt|white cheddar|kettle corn|caramel|butter|chili lime", "size": "4.4 ounce|10 ounce",
       "item package quantity": PACKS},
      "Popped Snack|Movie Night Snack|Party Pack",
      "Air popped for a light crunch|Big fluffy kernels|Ready to eat right from the bag|A movie night favorite",
      "movie nights|lunch boxes|office snacking", mass=True),
    T("maple syrup", "Grocery & Gourmet Food › Pantry Staples › Jams, Jellies & Sweet Spreads › Syrups › Maple",
      (9, 45), "Pure Maple Syrup|Maple Syrup|Grade A Maple Syrup",
      "usda organic|non gmo|kosher|glass bottle|single origin|gluten free|no additives|small batch",
      {"style": "amber rich|dark robust|golden delicate|very dark", "size": "8 fl oz|32 fl oz|1 gallon"},
      "from Vermont|Family Farm|Pancake Syrup",
      "Tapped from sugar maples each spring|Great on pancakes, oatmeal and in baking|Refrigerate after opening|"
      "Boiled down the traditional way",
      "pancakes and waffles|baking|coffee and oatmeal", mass=True),
    T("rice crackers", "Grocery & Gourmet Food › Snack Foods › Crackers › Rice Crackers", (4, 25),
      "Rice Crackers|Crispy Rice Crackers|Thin Rice Crackers",
      "gluten free|non gmo|vegan|whole grain|low fat|kosher|nut free|low sodium",
      {"flavor name": "sea salt|sesame|tamari|black pepper|seaweed|cheddar", "size": "3.5 ounce|6 ounce",
       "item package quantity": PACKS},
      "Crunchy Snack Crackers|Party Snack|Baked Crackers",
      "Light and crispy texture|Baked, never fried|Great with cheese or hummus|Resealable tray",
      "cheese boards|lunch boxes|afternoon snacking"),
    T("gummy candy", "Grocery & Gourmet Food › Candy & Chocolate › Gummy Candy", (4, 30),
      "Gummy Candy|Gummy Bears|Chewy Gummies",
      "gluten free|fat free|vegan|kosher|individually wrapped|resealable bag|natural flavors|non gmo",
      {"flavor name": "assorted fruit|sour watermelon|cherry|peach rings|tropical|blue raspberry",
       "size": "12 ounce|2 pound|80 ounce", "item package quantity": PACKS},
      "Bulk Candy|Party Favors|Fruit Snacks",
      "Soft and chewy texture|Bright fruit flavors|Great for party favors and goodie bags|Made in the USA",
      "birthday parties|movie nights|office candy jars", mass=True),
    T("seasoning blend", "Grocery & Gourmet Food › Pantry Staples › Herbs, Spices & Seasonings › Mixed Spices & "
      "Seasonings", (4, 28), "Seasoning Blend|All Purpose Seasoning|Spice Rub",
      "salt free|msg free|gluten free|non gmo|kosher|usda organic|no fillers|small batch|keto friendly",
      {"flavor name": "lemon pepper|garlic herb|cajun|everything bagel|smoky bbq|taco",
       "size": "2.5 ounce|9 ounce|16 ounce", "item package quantity": PACKS},
      "Spice Blend for Cooking|Grill Seasoning|Chef Blend",
      "Great on chicken, fish, vegetables and fries|Shaker lid with two pour sizes|Blended and packed in the USA|"
      "A pinch adds big flavor",
      "grilling|roasted vegetables|weeknight cooking"),
    T("peanut butter", "Grocery & Gourmet Food › Pantry Staples › Jams, Jellies & Sweet Spreads › Peanut Butter",
      (4, 22), "Peanut Butter|Natural Peanut Butter|Peanut Spread",
      "no sugar added|non gmo|usda organic|high protein|vegan|gluten free|kosher|no palm oil|keto friendly",
      {"style": "creamy|crunchy|honey roasted", "size": "16 ounce|28 ounce|40 ounce", "item package quantity": PACKS},
      "Made with Roasted Peanuts|Nut Butter Spread|Family Size Jar",
      "Made from dry roasted peanuts|Stir before serving|Great in smoothies and sandwiches|No need to refrigerate",
      "sandwiches|smoothies|baking", mass=True),
    T("protein powder", "Grocery & Gourmet Food › Beverages › Powdered Drink Mixes & Flavorings › Protein Drink Mixes",
      (19, 80), "Protein Powder|Protein Shake Powder|Protein Powder Drink Mix",
      "gluten free|non gmo|low sugar|plant based|grass fed|keto friendly|soy free|third party tested|dairy free",
      {"flavor name": "chocolate|vanilla|strawberry|cookies and cream|unflavored|salted caramel",
       "size": "1.5 pound|2 pound|10 pound"},
      "25g Protein per Serving|Post Workout Shake|Meal Replacement",
      "Mixes smoothly with a shaker or spoon|25 grams of protein per scoop|Scoop included|"
      "Great in smoothies and oatmeal",
      "post workout recovery|breakfast smoothies|busy days", mass=True),
    T("dried fruit", "Grocery & Gourmet Food › Dried Fruits & Vegetables › Dried Fruits", (5, 30),
      "Dried Fruit|Dried Fruit Snacks|Sun Dried Fruit",
      "no sugar added|unsulfured|usda organic|non gmo|vegan|gluten free|kosher|resealable bag",
      {"flavor name": "mango|apricot|cranberry|pineapple|mixed berry|banana chips",
       "size": "8 ounce|16 ounce|2 pound"},
      "Healthy Snack|Chewy Fruit Slices|Bulk Pack",
      "Soft and chewy slices|Just fruit, nothing else|Great in trail mix and oatmeal|Packed in a resealable pouch",
      "hiking and travel|lunch boxes|oatmeal and baking", mass=True),
)

FASHION = (
    T("men's ski pants", "Clothing, Shoes & Jewelry › Men › Clothing › Active › Active Pants", (35, 160),
      "Ski Pants|Snow Pants|Snowboard Pants|Snow Bib",
      "waterproof|windproof|insulated|breathable|adjustable waist|zip pockets|reinforced cuffs|machine wash",
      {"color": "black|navy|charcoal|olive green|red|royal blue", "size": APPAREL},
      "Winter Trousers|Outdoor Snow Sports Pants|for Skiing and Snowboarding",
      "Articulated knees for freedom of movement|Elastic snow gaiters keep powder out|"
      "Belt loops and a snap closure|Boot friendly hem",
      "skiing and snowboarding|winter hiking|snow days with the kids"),
    T("women's running shoes", "Clothing, Shoes & Jewelry › Women › Shoes › Athletic › Running › Road Running",
      (30, 140), "Running Shoes|Road Running Shoes|Athletic Sneakers|Jogging Shoes",
      "lightweight|breathable|non slip|arch support|memory foam|shock absorbing|wide toe box|machine wash",
      {"color": "black|white|pink|gray|lavender|teal", "size": WOMEN_SHOES},
      "Walking Sneakers|Tennis Shoes for Women|Gym Trainers",
      "Knit upper hugs the foot|Rubber outsole with deep flex grooves|Padded collar and tongue|"
      "Pull tab at the heel",
      "daily runs|the gym|walking all day"),
    T("women's yoga leggings", "Clothing, Shoes & Jewelry › Women › Clothing › Active › Leggings", (15, 60),
      "Yoga Leggings|Workout Leggings|Yoga Pants",
      "high waist|tummy control|squat proof|moisture wicking|four way stretch|side pockets|butt lift|machine wash",
      {"color": "black|navy|heather gray|burgundy|olive|dusty pink", "size": APPAREL,
       "style": "full length|capri|ankle length"},
      "Athletic Tights|Gym Leggings for Women|Buttery Soft Pants",
      "Buttery soft fabric|Flat seams prevent chafing|Hidden waistband key pocket|Stays put through every pose",
      "yoga and pilates|running|lounging at home"),
    T("men's dress shirt", "Clothing, Shoes & Jewelry › Men › Clothing › Shirts › Dress Shirts", (18, 70),
      "Dress Shirt|Long Sleeve Dress Shirt|Button Down Shirt",
      "slim fit|regular fit|wrinkle free|machine wash|stretch fabric|spread collar|moisture wicking|cotton blend",
      {"color": "white|light blue|black|pink|lavender|navy", "size": APPAREL},
      "Formal Business Shirt|Solid Button Up|for Work and Weddings",
      "Adjustable button cuffs|Curved hem stays tucked in|Removable collar stays|Back pleat for easy movement",
      "the office|weddings and formal events|job interviews"),
    T("women's puffer jacket",
      "Clothing, Shoes & Jewelry › Women › Clothing › Coats, Jackets & Vests › Down & Down Alternative", (40, 180),
      "Puffer Jacket|Quilted Puffer Coat|Winter Puffer Jacket",
      "water resistant|windproof|packable|detachable hood|lightweight|zip pockets|machine wash|recycled fill",
      {"color": "black|cream|olive|navy|burgundy", "size": APPAREL},
      "Warm Winter Coat|Quilted Outerwear|Short Down Alternative Jacket",
      "Quilted baffles keep the fill in place|Stand collar blocks the wind|Elastic cuffs|Two way front zipper",
      "cold commutes|winter travel|weekend walks"),
    T("men's hiking boots", "Clothing, Shoes & Jewelry › Men › Shoes › Outdoor › Hiking & Trekking › Hiking Boots",
      (45, 170), "Hiking Boots|Trail Hiking Boots|Mid Hiking Boots|Outdoor Trekking Boots",
      "waterproof|non slip|ankle support|breathable|lightweight|rubber sole|memory foam|wide width",
      {"color": "brown|black|gray|khaki|dark olive", "size": MEN_SHOES},
      "Outdoor Trail Shoes|Backpacking Boots|for Trekking",
      "Padded collar and gusseted tongue|Lace hooks for a secure fit|Toe cap protects against rocks|"
      "Suede and mesh upper",
      "day hikes|backpacking trips|muddy trails"),
    T("women's sandals", "Clothing, Shoes & Jewelry › Women › Shoes › Sandals › Flat Sandals", (15, 70),
      "Sandals|Flat Sandals|Slide Sandals|Strappy Sandals",
      "arch support|non slip|memory foam|adjustable strap|open toe|lightweight|waterproof|vegan leather",
      {"color": "black|tan|white|brown|silver|gold", "size": WOMEN_SHOES},
      "Summer Shoes|Beach Sandals|Casual Sandals for Women",
      "Contoured footbed|Flexible rubber outsole|Easy to slip on and off|Goes with dresses and shorts",
      "beach vacations|summer errands|all day walking"),
    T("men's jeans", "Clothing, Shoes & Jewelry › Men › Clothing › Jeans", (20, 80),
      "Jeans|Denim Jeans|Five Pocket Jeans",
      "slim fit|straight leg|relaxed fit|regular fit|stretch denim|machine wash|button fly|tapered leg",
      {"color": "dark wash|medium wash|light wash|black|gray", "size": "30w|32w|34w|36w|38w|40w"},
      "Classic Denim Pants|Everyday Jeans for Men|Casual Pants",
      "Classic five pocket styling|Sturdy zip fly|Reinforced belt loops|Softens with every wash",
      "everyday wear|casual Fridays|weekend outings"),
    T("women's maxi dress", "Clothing, Shoes & Jewelry › Women › Clothing › Dresses › Casual", (20, 80),
      "Maxi Dress|Summer Maxi Dress|Flowy Maxi Dress|Boho Long Dress",
      "short sleeve|sleeveless|v neck|smocked waist|side pockets|machine wash|lightweight|tiered ruffle",
      {"color": "black|navy floral|sage green|dusty blue|rust", "size": APPAREL},
      "Casual Beach Dress|Long Sundress|Boho Dress for Women",
      "Flowing ankle length skirt|Soft, breathable rayon|Easy pull on style|Dress it up or down",
      "summer vacations|weddings and brunches|everyday wear"),
    T("men's swim trunks", "Clothing, Shoes & Jewelry › Men › Clothing › Swim › Board Shorts", (15, 50),
      "Swim Trunks|Board Shorts|Beach Swim Shorts",
      "quick dry|mesh lining|elastic waist|zip pockets|upf 50|stretch fabric|drawstring waist|machine wash",
      {"color": "navy|black|red|turquoise|gray", "pattern name": "solid|palm leaf|stripes|tropical",
       "size": APPAREL},
      "Bathing Suit|Beach Shorts for Men|Swimwear",
      "7 inch inseam|Back pocket with a velcro flap|Goes from pool to street|Rinse in cold water after use",
      "beach vacations|pool days|surfing"),
    T("women's sports bra",
      "Clothing, Shoes & Jewelry › Women › Clothing › Lingerie, Sleep & Lounge › Lingerie › Bras › Sports Bras",
      (12, 45), "Sports Bra|Workout Bra|Athletic Bra",
      "high impact|removable pads|moisture wicking|racerback|wire free|four way stretch|seamless|medium support",
      {"color": "black|white|pink|lilac|teal|navy", "size": APPAREL},
      "Yoga Bra|Gym Top|Running Bra for Women",
      "Wide under band stays in place|Soft brushed fabric|Flat seams prevent chafing|Pullover style",
      "running|yoga|gym workouts"),
    T("baseball cap", "Clothing, Shoes & Jewelry › Men › Accessories › Hats & Caps › Baseball Caps", (10, 35),
      "Baseball Cap|Dad Hat|Classic Baseball Hat",
      "adjustable strap|cotton twill|washed cotton|breathable|low profile|unisex|sun protection|curved brim",
      {"color": "black|navy|khaki|white|olive|red|pink", "style": "plain|logo patch|distressed|vintage"},
      "Polo Style Cap|Golf Hat|Trucker Cap",
      "Six panel design with eyelets|Fits most head sizes|Sweatband keeps you dry|Folds into a bag",
      "sunny days|golf and sports|travel"),
    T("men's wool socks", "Clothing, Shoes & Jewelry › Men › Clothing › Socks › Athletic Socks", (12, 40),
      "Wool Socks|Hiking Socks|Crew Socks",
      "merino wool|moisture wicking|cushioned sole|odor resistant|arch support|breathable|machine wash|"
      "reinforced heel",
      {"color": "charcoal|brown|navy|gray|assorted", "size": "medium|large|xl", "item package quantity": PACKS},
      "Thermal Boot Socks|Warm Winter Socks|Outdoor Socks for Men",
      "Seamless toe closure|Stays up without slipping|Warm in winter, cool in summer|Knit in North Carolina",
      "hiking|cold weather|work boots"),
    T("women's crossbody bag", "Clothing, Shoes & Jewelry › Women › Handbags & Wallets › Crossbody Bags", (15, 80),
      "Crossbody Bag|Small Crossbody Purse|Crossbody Shoulder Bag",
      "vegan leather|adjustable strap|rfid blocking|multiple pockets|lightweight|water resistant|genuine leather|"
      "zipper closure",
      {"color": "black|tan|burgundy|cream|olive|gray"},
      "Cell Phone Purse|Small Handbag|Travel Purse for Women",
      "Fits a phone, wallet and keys|Card slots inside|Gold tone hardware|Dust bag included",
      "travel|errands and shopping|concerts and festivals"),
    T("men's leather belt", "Clothing, Shoes & Jewelry › Men › Accessories › Belts", (12, 50),
      "Leather Belt|Dress Belt|Casual Belt",
      "genuine leather|full grain|reversible|gift box|ratchet buckle|nickel free|trim to fit|classic buckle",
      {"color": "black|brown|tan|cognac|burgundy", "size": "32|34|36|38|40|42|44"},
      "for Jeans and Dress Pants|Formal Belt for Men|1.25 Inch Wide",
      "1.25 inch width fits most belt loops|Stitched edges|Polished metal finish|Ages well with wear",
      "the office|jeans and chinos|weddings"),
    T("women's cardigan sweater", "Clothing, Shoes & Jewelry › Women › Clothing › Sweaters › Cardigans", (20, 70),
      "Cardigan Sweater|Knit Cardigan|Long Cardigan",
      "open front|button front|chunky knit|side pockets|long sleeve|soft knit|machine wash|oversized",
      {"color": "ivory|camel|black|heather gray|sage green|burgundy", "size": APPAREL},
      "Casual Outerwear|Fall Sweater Coat|Lightweight Layer",
      "Ribbed cuffs and hem|Drapes softly over the hips|Layers over tees and dresses|Cozy without bulk",
      "chilly offices|fall weekends|travel"),
    T("men's pullover hoodie", "Clothing, Shoes & Jewelry › Men › Clothing › Fashion Hoodies & Sweatshirts", (20, 65),
      "Pullover Hoodie|Hooded Sweatshirt|Fleece Hoodie",
      "fleece lined|kangaroo pocket|drawstring hood|machine wash|relaxed fit|athletic fit|heavyweight|soft cotton",
      {"color": "black|heather gray|navy|forest green|maroon|charcoal", "size": APPAREL},
      "Casual Sweatshirt|Hoodie for Men|Workout Pullover",
      "Ribbed cuffs and waistband|Double lined hood|Pre shrunk fabric|Holds its shape wash after wash",
      "cool evenings|the gym|lounging at home"),
    T("women's ankle boots", "Clothing, Shoes & Jewelry › Women › Shoes › Boots › Ankle & Bootie", (30, 110),
      "Ankle Boots|Ankle Booties|Fashion Ankle Boots",
      "block heel|side zipper|faux suede|vegan leather|pointed toe|non slip|memory foam|water resistant",
      {"color": "black|taupe|cognac|gray|chestnut", "size": WOMEN_SHOES},
      "Fall Booties|Chelsea Boots for Women|Dress Boots",
      "Pull tab at the back|Stacked heel for stability|Padded insole|Goes with jeans and dresses",
      "the office|fall outfits|nights out"),
    T("men's quartz watch", "Clothing, Shoes & Jewelry › Men › Watches › Wrist Watches", (25, 160),
      "Quartz Watch|Analog Wrist Watch|Dress Watch",
      "water resistant|stainless steel|leather band|scratch resistant|date display|luminous hands|gift box|"
      "minimalist design",
      {"color": "black|silver|gold|navy|brown", "size": "40mm|42mm|44mm"},
      "Analog Watch for Men|Classic Business Watch|Casual Wristwatch",
      "Japanese quartz movement|Easy to read dial|Adjustable band fits most wrists|Battery included",
      "the office|formal events|everyday wear"),
    T("women's sunglasses",
      "Clothing, Shoes & Jewelry › Women › Accessories › Sunglasses & Eyewear Accessories › Sunglasses", (12, 60),
      "Sunglasses|Fashion Sunglasses|Retro Sunglasses",
      "polarized|uv protection|lightweight|oversized|scratch resistant|metal frame|spring hinges|hard case",
      {"color": "black|tortoise|brown|pink|clear", "style": "cat eye|round|square|aviator"},
      "Trendy Shades|Sunglasses for Women|Vintage Eyewear",
      "Cuts glare on the road and at the beach|Comfortable nose pads|Cleaning cloth included|"
      "Fits medium to large faces",
      "driving|beach days|travel"),
)

FURNITURE = (
    T("bookshelf", "Home & Kitchen › Furniture › Home Office Furniture › Bookcases", (45, 250),
      "Bookshelf|Bookcase|Open Bookshelf|Standing Bookshelf",
      "easy assemble|solid wood|metal frame|storage space|living room|home office|anti tip|adjustable shelves",
      {"color": WOOD, "size": TIERS},
      "Industrial Shelving Unit|Display Shelf|Tall Book Shelves",
      "Holds books, plants and decor|Leveling feet for uneven floors|Clear instructions and all hardware included|"
      "Each shelf holds up to 50 pounds",
      "books and collectibles|a reading nook|small apartments"),
    T("office chair", "Home & Kitchen › Furniture › Home Office Furniture › Home Office Desk Chairs", (60, 320),
      "Office Chair|Ergonomic Office Chair|Desk Chair|Executive Office Chair",
      "lumbar support|adjustable height|mesh back|padded armrests|high back|easy assemble|heavy duty|flip up arms",
      {"color": "black|gray|white|blue", "style": "standard|with headrest|with footrest"},
      "Computer Task Chair|Rolling Swivel Chair|for Home Office",
      "Smooth rolling casters|Tilt lock and tension control|Wide seat cushion|Supports up to 300 pounds",
      "long work days|gaming|a home office"),
    T("coffee table", "Home & Kitchen › Furniture › Living Room Furniture › Tables › Coffee Tables", (50, 280),
      "Coffee Table|Modern Coffee Table|Center Table",
      "lift top|storage shelf|easy assemble|solid wood|metal frame|living room|hidden compartment|tempered glass",
      {"color": WOOD, "style": "round|rectangle|square|oval"},
      "Cocktail Table|Farmhouse Table|Sofa Center Table",
      "Sturdy frame with adjustable feet|Room for books, remotes and magazines|Wipes clean with a damp cloth|"
      "All hardware and tools included",
      "family movie nights|entertaining guests|small apartments"),
    T("tv stand", "Home & Kitchen › Furniture › Living Room Furniture › TV & Media Furniture › Television Stands & "
      "Entertainment Centers", (60, 300), "TV Stand|Entertainment Center|Media Console",
      "cable management|led lights|easy assemble|living room|solid wood|open shelves|barn doors|storage cabinets",
      {"color": WOOD, "size": "55 inch|63 inch|70 inch"},
      "TV Console Table|Media Cabinet|Entertainment Stand",
      "Room for consoles, speakers and streaming boxes|Adjustable shelf heights|Anti scratch feet|"
      "Supports up to 150 pounds",
      "movie nights|gaming setups|a tidy living space"),
    T("bar stools", "Home & Kitchen › Furniture › Game & Recreation Room Furniture › Home Bar Furniture › Barstools",
      (50, 240), "Bar Stools|Kitchen Bar Stools|Counter Stools",
      "swivel seat|adjustable height|back support|footrest|faux leather|easy assemble|solid wood|metal frame",
      {"color": "black|white|gray|brown|cream", "size": "counter height|bar height", "item package quantity": SETS},
      "for Kitchen Island|Pub Chairs|Dining Stools",
      "Floor protectors on every leg|Wide padded seat|Wipes clean in seconds|Supports up to 250 pounds",
      "kitchen islands|home bars|breakfast counters"),
    T("nightstand", "Home & Kitchen › Furniture › Bedroom Furniture › Nightstands", (30, 160),
      "Nightstand|Bedside Table|Night Stand",
      "charging station|usb ports|storage drawer|easy assemble|solid wood|open shelf|led lights|small spaces",
      {"color": WOOD, "item package quantity": "1 pack|2 pack"},
      "End Table for Bedroom|Side Table|Bedside Cabinet",
      "Smooth metal drawer slides|Room for a lamp, phone and books|Rounded corners|Fits beside most beds",
      "the bedroom|guest rooms|dorm rooms"),
    T("platform bed frame", "Home & Kitchen › Furniture › Bedroom Furniture › Beds, Frames & Bases › Bed Frames",
      (90, 450), "Platform Bed Frame|Bed Frame|Metal Platform Bed",
      "no box spring|under bed storage|easy assemble|heavy duty|noise free|wood slats|upholstered headboard|"
      "charging station",
      {"size": "twin|full|queen|king", "color": "black|gray|white|walnut"},
      "Mattress Foundation|Modern Bed|Sturdy Bed Base",
      "Center support legs for stability|Assembles in about 30 minutes|Supports up to 800 pounds|"
      "Rounded corners protect your shins",
      "the master bedroom|guest rooms|kids and teens"),
    T("loveseat sofa", "Home & Kitchen › Furniture › Living Room Furniture › Sofas & Couches", (150, 700),
      "Loveseat Sofa|Small Sofa Couch|Loveseat Couch",
      "small spaces|easy assemble|removable cushions|solid wood|living room|deep seats|stain resistant|"
      "high density foam",
      {"color": FABRIC, "material": "linen|chenille|faux leather|boucle"},
      "Mid Century Modern Couch|2 Seater Sofa|Apartment Sofa",
      "Tapered legs lift it off the floor|Supportive seat and back cushions|Throw pillows included|"
      "Arrives in one box",
      "apartments|reading corners|family rooms"),
    T("dining chairs", "Home & Kitchen › Furniture › Kitchen & Dining Room Furniture › Chairs", (60, 280),
      "Dining Chairs|Kitchen Dining Chairs|Mid Century Dining Chairs",
      "upholstered seat|solid wood|metal legs|easy assemble|high back|faux leather|armless|stackable",
      {"color": FABRIC, "item package quantity": "set of two|set of four|set of six"},
      "Side Chairs|Kitchen Chairs|Dining Room Chairs",
      "Curved backrest for comfort|Floor protectors on every leg|Sturdy cross bracing|Wipes clean with a damp cloth",
      "family dinners|kitchen tables|entertaining guests"),
    T("computer desk", "Home & Kitchen › Furniture › Home Office Furniture › Home Office Desks", (45, 260),
      "Computer Desk|Writing Desk|Study Desk|Gaming Desk",
      "home office|small spaces|storage shelves|easy assemble|metal frame|monitor shelf|keyboard tray|"
      "cable management",
      {"color": WOOD, "size": "39 inch|47 inch|55 inch"},
      "Modern Simple Desk|Laptop Table|Workstation",
      "Spacious desktop for a laptop and monitor|Adjustable leveling feet|Scratch resistant surface|"
      "Side hook for headphones",
      "working from home|homework and studying|gaming"),
    T("shoe rack", "Home & Kitchen › Storage & Organization › Clothing & Closet Storage › Shoe Organizers › Free "
      "Standing Shoe Racks", (20, 90), "Shoe Rack|Shoe Organizer|Shoe Storage Shelf",
      "easy assemble|metal frame|stackable|space saving|bamboo|entryway|dust cover|heavy duty",
      {"color": "black|white|natural|gray", "size": TIERS},
      "Shoe Shelf|Closet Organizer|Free Standing Rack",
      "Holds sneakers, heels and boots|Tool free assembly|Slanted or flat shelves|Wipes clean easily",
      "the entry hall|closets|dorm rooms"),
    T("storage ottoman", "Home & Kitchen › Furniture › Living Room Furniture › Ottomans", (30, 150),
      "Storage Ottoman|Ottoman Bench|Storage Bench",
      "foldable|faux leather|living room|hidden storage|padded seat|linen fabric|heavy duty|no assembly",
      {"color": FABRIC, "style": "cube|bench|round"},
      "Foot Rest|Toy Box|Bedroom Bench",
      "Lift off lid|Doubles as extra seating|Holds blankets, toys and games|Supports up to 300 pounds",
      "living rooms|bedrooms|kids rooms"),
    T("accent chair", "Home & Kitchen › Furniture › Living Room Furniture › Chairs › Accent Chairs", (80, 380),
      "Accent Chair|Armchair|Mid Century Accent Chair|Reading Chair",
      "living room|bedroom|easy assemble|wood legs|thick cushions|swivel base|velvet upholstery|high back",
      {"color": FABRIC},
      "Comfy Club Chair|Side Chair|Lounge Chair",
      "Supportive back and arms|Sturdy frame|Non marking foot pads|Arrives in one box",
      "reading nooks|conversation corners|home offices"),
    T("bean bag chair", "Home & Kitchen › Furniture › Living Room Furniture › Chairs › Bean Bags", (35, 220),
      "Bean Bag Chair|Bean Bag Sofa|Giant Bean Bag",
      "memory foam|removable cover|machine wash|living room|faux fur|microsuede|easy clean|kids room",
      {"color": FABRIC, "size": "3 ft|4 ft|5 ft|6 ft"},
      "Lazy Sofa|Floor Lounger|Gaming Chair",
      "Molds to your body|Double stitched seams|Child safe zipper|Expands within 48 hours of unpacking",
      "movie nights|gaming|reading"),
    T("dresser", "Home & Kitchen › Furniture › Bedroom Furniture › Dressers", (70, 350),
      "Dresser|Chest of Drawers|Drawer Dresser",
      "easy assemble|solid wood|anti tip|bedroom|fabric drawers|metal handles|storage space|wide top",
      {"color": WOOD, "size": "three drawer|four drawer|five drawer|six drawer"},
      "Storage Tower|Tall Dresser|Clothes Organizer",
      "Smooth gliding drawers|Room for a lamp and decor on top|Wall anchor kit included|Rounded corners",
      "bedrooms|nurseries|closets"),
    T("floating shelves", "Home & Kitchen › Home Décor Products › Shelves & Ledges › Floating Shelves", (15, 70),
      "Floating Shelves|Wall Shelves|Wall Mounted Shelves",
      "solid wood|hidden brackets|easy install|heavy duty|bathroom|living room|rustic finish|kitchen",
      {"color": WOOD, "size": "16 inch|24 inch|30 inch", "item package quantity": SETS},
      "Wall Decor Shelf|Display Ledge|Picture Ledge",
      "Mounting hardware included|Great for plants, photos and spices|Each shelf holds up to 20 pounds|"
      "Smooth sanded edges",
      "small spaces|photos and plants|spice storage"),
    T("standing desk", "Home & Kitchen › Furniture › Home Office Furniture › Home Office Desks", (120, 600),
      "Standing Desk|Sit Stand Desk|Stand Up Desk",
      "dual motor|memory presets|height adjustable|home office|easy assemble|cable management|anti collision|"
      "heavy duty",
      {"color": WOOD, "size": "42 inch|55 inch|63 inch"},
      "Adjustable Computer Desk|Electric Workstation|Ergonomic Desk",
      "Quiet, smooth lift|Sturdy steel legs|Splice board top|Adjustable leveling feet",
      "working from home|long work days|gaming"),
    T("vanity table", "Home & Kitchen › Furniture › Bedroom Furniture › Vanities & Vanity Benches › Vanities",
      (70, 320), "Vanity Table|Makeup Vanity Desk|Vanity Desk",
      "lighted mirror|storage drawers|cushioned stool|easy assemble|bedroom|charging station|solid wood|"
      "small spaces",
      {"color": "white|black|gray|pink|walnut", "size": "31 inch|47 inch"},
      "Dressing Table|Makeup Table|Vanity Set",
      "Three light color modes|Room for makeup, jewelry and skincare|Touch screen dimmer|Rounded corners",
      "daily makeup routines|bedrooms|dressing rooms"),
    T("console table", "Home & Kitchen › Furniture › Living Room Furniture › Tables › Sofa Tables", (50, 250),
      "Console Table|Sofa Table|Hallway Table",
      "narrow design|storage shelves|easy assemble|entryway|living room|metal frame|solid wood|power outlets",
      {"color": WOOD, "size": "39 inch|47 inch|55 inch"},
      "Behind Couch Table|Accent Table|Foyer Table",
      "Room for lamps, keys and decor|Adjustable feet|Sturdy frame|All tools and hardware included",
      "hallways|behind the sofa|small apartments"),
    T("memory foam mattress", "Home & Kitchen › Furniture › Bedroom Furniture › Mattresses & Box Springs › Mattresses",
      (130, 800), "Memory Foam Mattress|Gel Memory Foam Mattress|Mattress in a Box",
      "cooling gel|medium firm|pressure relief|certipur certified|fiberglass free|motion isolation|"
      "breathable cover|back pain",
      {"size": "twin|full|queen|king", "style": "6 inch|8 inch|10 inch"},
      "Bed Mattress|Foam Mattress|Bedroom Mattress",
      "Arrives rolled in a box|Expands fully within 48 hours|Works on slats, platforms and floors|"
      "Backed by a 10 year warranty",
      "side sleepers|guest rooms|kids and teens"),
)

ELECTRONICS = (
    T("bluetooth headphones", "Electronics › Headphones, Earbuds & Accessories › Headphones › Over-Ear Headphones",
      (25, 200), "Bluetooth Headphones|Wireless Headphones|Over Ear Headphones",
      "noise cancelling|long battery|foldable design|built in microphone|deep bass|fast charging|memory foam|"
      "hands free",
      {"color": TECH},
      "Wireless Over Ear Headset|with Carrying Case|Hi-Fi Stereo Sound",
      "Bluetooth 5.3 pairs in seconds|Wired mode with the included cable|Soft protein leather ear cushions|"
      "Controls on the ear cup",
      "travel and commuting|working from home|workouts"),
    T("hdmi cable", "Electronics › Television & Video › Accessories › Cables › HDMI Cables", (6, 40),
      "HDMI Cable|HDMI 2.1 Cable|HDMI Cord",
      "high speed|nylon braided|gold plated|8k 60hz|4k 120hz|dolby vision|ethernet|plug and play",
      {"size": "3 ft|6 ft|10 ft|15 ft", "item package quantity": PACKS, "color": "black|white"},
      "for TV and Gaming Console|for Monitor and Laptop|48Gbps",
      "Works with TVs, monitors, consoles and laptops|Aluminum connector shells|Backward compatible|"
      "Lifetime support",
      "gaming consoles|home theaters|laptops and monitors"),
    T("wireless earbuds", "Electronics › Headphones, Earbuds & Accessories › Earbuds & In-Ear Headphones", (18, 150),
      "Wireless Earbuds|Bluetooth Earbuds|True Wireless Earbuds",
      "noise cancelling|ipx7 waterproof|charging case|touch control|long battery|built in microphone|deep bass|"
      "sweatproof",
      {"color": TECH},
      "in Ear Headphones|Sport Earphones|with Mic",
      "Pairs automatically when you open the case|Three sizes of ear tips|Bluetooth 5.3|Secure, snug fit",
      "workouts|commuting|phone calls"),
    T("portable charger", "Electronics › Cell Phones & Accessories › Accessories › Chargers & Power Adapters › "
      "Portable Power Banks", (15, 80), "Portable Charger|Power Bank|Battery Pack",
      "fast charging|usb c|led display|compact size|dual output|airline approved|wireless charging|"
      "built in cables",
      {"capacity": "5000mah|10000mah|26800mah", "color": "black|white|blue"},
      "for iPhone and Android|Phone Charger|External Battery",
      "Charges two devices at once|Charges most phones several times|Pocket friendly size|Charging cable included",
      "travel|camping|long days out"),
    T("usb c wall charger", "Electronics › Cell Phones & Accessories › Accessories › Chargers & Power Adapters › Wall "
      "Chargers", (9, 50), "USB C Wall Charger|USB C Charger|Charger Block",
      "fast charging|foldable plug|gan technology|dual port|compact size|overheat protection|cable included|"
      "universal compatibility",
      {"style": "20w|35w|65w|100w", "color": "black|white"},
      "Power Adapter|for iPhone, iPad and Laptop|Travel Charger",
      "Charges a phone and a laptop at the same time|Smart chip picks the right power|Cool to the touch|"
      "Fits in any pocket",
      "travel|the nightstand|the office"),
    T("bluetooth speaker", "Electronics › Portable Audio & Video › Portable Speakers & Docks › Portable Bluetooth "
      "Speakers", (20, 160), "Bluetooth Speaker|Portable Speaker|Wireless Speaker",
      "waterproof|deep bass|long battery|stereo pairing|built in microphone|outdoor use|led lights|shockproof",
      {"color": "black|blue|red|camo|gray"},
      "Loud Stereo Sound|with Carry Strap|for Home and Outdoors",
      "360 degree sound|Bluetooth 5.3 with a 100 foot range|Charges with USB C|Floats in water",
      "pool parties|camping trips|the shower"),
    T("wireless mouse",
      "Electronics › Computers & Accessories › Computer Accessories & Peripherals › Keyboards, Mice & Accessories › "
      "Mice", (9, 70), "Wireless Mouse|Bluetooth Mouse|Computer Mouse",
      "silent click|ergonomic design|rechargeable|adjustable dpi|usb receiver|dual mode|plug and play|left handed",
      {"color": "black|white|gray|pink|blue"},
      "for Laptop and PC|Cordless Mouse|Portable Mouse",
      "Smooth scroll wheel|Works on most surfaces|Sleeps automatically to save power|Fits in a laptop bag",
      "working from home|travel|students"),
    T("mechanical keyboard", "Electronics › Computers & Accessories › Computer Accessories & Peripherals › Keyboards, "
      "Mice & Accessories › Keyboards", (30, 180), "Mechanical Keyboard|Gaming Keyboard|Mechanical Gaming Keyboard",
      "hot swappable|rgb backlit|wrist rest|anti ghosting|compact layout|usb c|detachable cable|pbt keycaps",
      {"style": "red switch|blue switch|brown switch", "color": "black|white|gray",
       "size": "full size|tenkeyless|60 percent"},
      "for PC and Mac|Wired Keyboard|for Gaming and Typing",
      "Satisfying tactile feedback|Aluminum top plate|Keycap puller included|Media keys",
      "gaming|programming|typing all day"),
    T("iphone case", "Electronics › Cell Phones & Accessories › Cases, Holsters & Sleeves › Basic Cases", (8, 40),
      "iPhone Case|Phone Case|Protective Phone Case",
      "shockproof|slim design|magsafe compatible|raised edges|wireless charging|built in kickstand|military grade|"
      "anti yellowing",
      {"color": "black|clear|navy blue|pink|purple", "pattern name": "marble|floral|solid|carbon fiber"},
      "for iPhone 15|Protective Cover|Bumper Case",
      "Precise cutouts for ports and cameras|Tactile button covers|Easy to put on and take off|Grippy sides",
      "everyday protection|active lifestyles|gifts"),
    T("screen protector", "Electronics › Cell Phones & Accessories › Accessories › Screen Protectors", (6, 25),
      "Screen Protector|Tempered Glass Screen Protector|Glass Screen Protector",
      "bubble free|case friendly|easy install|9h hardness|anti fingerprint|high definition|alignment frame|"
      "touch sensitive",
      {"item package quantity": PACKS, "style": "clear|privacy|matte"},
      "for iPhone 15|Phone Screen Guard|Full Coverage Film",
      "Cleaning kit included|Keeps the screen responsive|Rounded edges|Lifetime replacement",
      "new phones|kids and teens|work phones"),
    T("webcam", "Electronics › Computers & Accessories › Computer Accessories & Peripherals › Audio & Video "
      "Accessories › Webcams", (20, 120), "Webcam|HD Webcam|Streaming Webcam",
      "1080p hd|built in microphone|privacy cover|auto focus|wide angle|plug and play|low light|ring light",
      {"color": "black|white", "style": "standard|pro|streamer edition"},
      "for PC and Laptop|USB Computer Camera|for Video Calls",
      "Clip fits laptops and monitors|Tripod thread on the base|Works with popular video call apps|"
      "Six foot cable",
      "video calls|streaming|online classes"),
    T("fitness tracker", "Electronics › Wearable Technology › Activity & Fitness Trackers", (25, 140),
      "Fitness Tracker|Activity Tracker Watch|Smart Fitness Band",
      "heart rate|sleep tracking|waterproof|long battery|step counter|blood oxygen|built in gps|"
      "message notifications",
      {"color": "black|pink|navy|lavender|teal"},
      "for Women and Men|Health Monitor|Pedometer Watch",
      "Color touch screen|Over 20 sport modes|Free companion app|Soft silicone strap",
      "daily workouts|running|better health habits"),
    T("laptop stand", "Electronics › Computers & Accessories › Laptop Accessories › Laptop Stands", (15, 70),
      "Laptop Stand|Laptop Riser|Laptop Holder",
      "adjustable height|aluminum alloy|foldable design|heat dissipation|ergonomic design|non slip|heavy duty|"
      "portable",
      {"color": "silver|space gray|black|white"},
      "for Desk|Computer Stand|for MacBook and Notebooks",
      "Fits laptops from 10 to 17 inches|Raises the screen to eye level|Carry pouch included|Sturdy base",
      "working from home|the office|coffee shops"),
    T("portable ssd", "Electronics › Computers & Accessories › Data Storage › External Solid State Drives", (45, 260),
      "Portable SSD|External Solid State Drive|Portable External SSD",
      "usb c|fast transfer|shock resistant|hardware encryption|compact size|plug and play|mac compatible|"
      "rugged design",
      {"capacity": "500gb|1tb|2tb|4tb", "color": "black|gray|blue|red"},
      "External Hard Drive|Pocket Drive|for Photos and Videos",
      "Read speeds up to 1050MB per second|Both USB C and USB A cables included|Backup software included|"
      "Fits in a pocket",
      "photo and video backups|gaming consoles|travel"),
    T("micro sd card", "Electronics › Computers & Accessories › Computer Accessories & Peripherals › Memory Cards › "
      "Micro SD Cards", (8, 60), "Micro SD Card|Memory Card|microSDXC Card",
      "high speed|4k video|sd adapter|waterproof|nintendo switch|dash cam|temperature proof|a2 rated",
      {"capacity": "64gb|128gb|256gb|512gb", "item package quantity": PACKS},
      "UHS-I Flash Card|for Phones and Cameras|Class 10",
      "Read speeds up to 160MB per second|Works in phones, tablets and cameras|Limited lifetime warranty|"
      "Stores thousands of photos",
      "phones and tablets|action cameras|game consoles"),
    T("car phone mount", "Electronics › Cell Phones & Accessories › Accessories › Automobile Accessories › Cradles",
      (10, 50), "Car Phone Mount|Phone Holder for Car|Car Phone Holder",
      "air vent|dashboard|magnetic|360 degree rotation|strong suction|wireless charging|one hand operation|"
      "thick cases",
      {"style": "vent mount|dash mount|cup holder mount", "color": "black|silver"},
      "Hands Free Cradle|for iPhone and Android|Car Accessories",
      "Holds phones from 4 to 7 inches|Stays steady on bumpy roads|Installs in seconds|Leaves no residue",
      "road trips|daily commutes|rideshare driving"),
    T("surge protector", "Electronics › Accessories & Supplies › Power Protection › Surge Protectors", (12, 60),
      "Surge Protector Power Strip|Power Strip|Surge Protector",
      "usb ports|flat plug|wall mountable|widely spaced outlets|overload protection|etl listed|extension cord|"
      "usb c",
      {"size": "6 ft|10 ft|15 ft", "color": "black|white"},
      "Outlet Extender|Charging Station|for Home and Office",
      "Protects electronics from power spikes|Indicator light shows protection is on|Safety covers|"
      "Fits behind furniture",
      "home offices|entertainment centers|dorm rooms"),
    T("security camera", "Electronics › Camera & Photo › Video Surveillance › Surveillance Cameras", (25, 180),
      "Security Camera|WiFi Security Camera|Home Security Camera",
      "night vision|motion detection|two way audio|weatherproof|cloud storage|battery powered|2k resolution|"
      "local storage",
      {"style": "indoor|outdoor", "item package quantity": PACKS, "color": "white|black"},
      "Surveillance Camera|Home Monitor|Pet Camera",
      "Live view from your phone|Sets up in minutes|Works with popular voice assistants|Mounting kit included",
      "front doors|pets|driveways"),
    T("tv wall mount", "Electronics › Television & Video › Accessories › TV Mounts, Stands & Turntables › TV Wall & "
      "Ceiling Mounts", (20, 110), "TV Wall Mount|TV Mount Bracket|Wall Mount for TV",
      "full motion|tilting|swivel arm|easy install|heavy duty|cable management|low profile|vesa compatible",
      {"size": "26 to 55 inch|37 to 70 inch|42 to 86 inch"},
      "TV Bracket|Wall Mount Bracket|for Flat Screen TVs",
      "All mounting hardware included|Built in bubble level|Fits 16 inch wood studs|Holds up to 132 pounds",
      "living rooms|bedrooms|conference rooms"),
    T("gaming headset", "Electronics › Computers & Accessories › Computer Accessories & Peripherals › Audio & Video "
      "Accessories › PC Gaming Headsets", (20, 150), "Gaming Headset|Gaming Headphones|Over Ear Gaming Headset",
      "noise cancelling|surround sound|rgb lighting|memory foam|detachable microphone|low latency|lightweight|"
      "multi platform",
      {"color": "black|white|red|blue"},
      "for PC, PS5 and Xbox|with Mic|Stereo Headphones",
      "Volume wheel on the ear cup|Braided cable|Adjustable headband|Works with most consoles",
      "long gaming sessions|team chat|streaming"),
)

TAXONOMY = {"beauty": BEAUTY, "food": FOOD, "fashion": FASHION, "furniture": FURNITURE, "electronics": ELECTRONICS}

# Where an instruction puts an attribute: before the noun (the default), "for ...", "in a ..." or "with ...".
FOR_ATTRS = set("""
dry hair|color treated hair|damaged hair|fine hair|hair growth|beard growth|sensitive skin|dry skin|sensitive eyes|
dark spots|fine lines|itch relief|living room|bedroom|home office|kitchen|bathroom|small spaces|kids room|back pain|
nintendo switch|dash cam|outdoor use|better sleep|thick cases
""".replace("\n", "").split("|"))
IN_ATTRS = {"glass bottle", "glass jar", "resealable bag", "gift box"}
WITH_ATTRS = set("""
natural ingredients|tea tree|argan oil|jojoba oil|hyaluronic acid|shea butter|zinc oxide|collagen|negative ions|
diffuser attachment|cool shot button|foldable handle|floral notes|woody notes|fresh citrus|travel case|wooden handles|
synthetic bristles|soft bristles|bleached knots|baby hair|natural hairline|shimmer shades|no additives|no nitrates|
no palm oil|no fillers|no sugar added|no box spring|no assembly|natural flavors|heart rate|sleep tracking|blood oxygen|
built in gps|message notifications|step counter|heat dissipation|high density foam|kangaroo pocket|drawstring hood|
drawstring waist|elastic waist|side pockets|zip pockets|mesh lining|removable pads|side zipper|multiple pockets|
zipper closure|leather band|date display|luminous hands|spring hinges|hard case|lumbar support|padded armrests|
flip up arms|storage shelf|storage shelves|storage drawer|storage drawers|storage space|storage cabinets|
hidden compartment|hidden storage|cable management|led lights|barn doors|open shelf|open shelves|charging station|
usb ports|usb c|wood slats|upholstered headboard|under bed storage|removable cushions|deep seats|upholstered seat|
metal legs|monitor shelf|keyboard tray|dust cover|padded seat|wood legs|thick cushions|swivel base|velvet upholstery|
removable cover|metal handles|fabric drawers|wide top|hidden brackets|memory presets|dual motor|lighted mirror|
cushioned stool|power outlets|back support|footrest|swivel seat|built in microphone|charging case|touch control|
led display|dual output|built in cables|wireless charging|overheat protection|cable included|stereo pairing|wrist rest|
pbt keycaps|detachable cable|raised edges|swivel arm|built in kickstand|alignment frame|privacy cover|ring light|
auto focus|two way audio|night vision|motion detection|cloud storage|local storage|sd adapter|surround sound|
rgb lighting|detachable microphone|memory foam|uv protection|usb receiver|adjustable dpi|widely spaced outlets|
overload protection|extension cord|ethernet|dolby vision|arch support|rubber sole|ankle support|wide toe box|
cushioned sole|reinforced heel|reinforced cuffs|adjustable waist|adjustable strap|detachable hood|recycled fill|
spread collar|button fly|adjustable shelves|deep bass|long battery|adjustable temperature|lcd display|auto shut off|
ceramic plates|titanium plates|double weft|mesh back
""".replace("\n", "").split("|"))

# A bullet point's text for each attribute (the bullet's label names the attribute itself).
CLAUSES = {
    "1080p hd": "sharp full hd video at 30 frames per second", "2k resolution": "crisp video shows faces clearly",
    "360 degree rotation": "turn the phone to portrait or landscape in a second",
    "4k 120hz": "smooth 4k gaming at up to 120 frames per second", "4k video": "records smooth footage without drops",
    "8k 60hz": "ready for the newest 8k tvs", "9h hardness": "shrugs off keys and coins in your pocket",
    "a2 rated": "apps open and run quickly straight from the card", "adjustable dpi": "switch tracking speeds",
    "adjustable height": "set the height that suits you", "adjustable shelves": "move shelves to fit tall books",
    "adjustable strap": "dial in the fit you like", "adjustable temperature": "choose the heat that suits your hair",
    "adjustable waist": "hook and loop tabs fine tune the fit", "air vent": "clips securely to most vent slats",
    "airline approved": "small enough to carry on a plane", "alignment frame": "lines the glass up on the first try",
    "all natural": "made from simple ingredients you can pronounce", "aluminum alloy": "sturdy metal body stays cool",
    "aluminum free": "lets your body breathe naturally", "ankle support": "padded collar steadies you on rough ground",
    "anti aging": "helps smooth the look of wrinkles over time", "anti collision": "stops when it meets an obstacle",
    "anti fingerprint": "oleophobic coating wipes clean", "anti ghosting": "every key press registers in fast games",
    "anti tip": "wall anchor kit keeps it steady", "anti yellowing": "stays crystal clear over time",
    "arch support": "contoured footbed cradles your arches", "argan oil": "adds shine and softness",
    "armless": "slim profile tucks under the table", "athletic fit": "tailored through the chest and arms",
    "auto focus": "keeps you sharp as you move", "auto shut off": "turns itself off after 60 minutes of no use",
    "baby hair": "pre styled edges blend into your own hair", "back pain": "zoned support for the lower back",
    "back support": "curved backrest supports you during meals", "baking soda free": "kind to underarms that react",
    "bamboo": "made from sustainable bamboo", "barn doors": "sliding doors hide clutter",
    "bathroom": "holds towels and toiletries", "battery powered": "no wires needed, place it anywhere",
    "beard growth": "helps patchy beards look fuller", "bedroom": "sized right for bedroom corners",
    "better sleep": "a calming blend to help you unwind before bed", "bleached knots": "for an invisible part",
    "block heel": "steady heel for all day comfort", "blood oxygen": "checks your levels on demand",
    "bpa free": "cans are lined without bpa", "breathable": "lets air flow to keep you cool and dry",
    "breathable cover": "airy knit cover helps you sleep cool", "broad spectrum": "protects against uva and uvb rays",
    "bubble free": "goes on smooth with no air pockets", "built in cables": "never forget a charging cable again",
    "built in gps": "tracks pace and distance without your phone", "built in kickstand": "stand your phone up",
    "built in microphone": "clear calls and voice chat", "butt lift": "ruched back seam for a flattering shape",
    "button fly": "classic closure", "button front": "classic buttons from neck to hem",
    "cable included": "comes with a 6 ft charging cable", "cable management": "keeps cords tidy and out of sight",
    "caffeine free": "enjoy a cup any time of day", "case friendly": "leaves room for most cases",
    "ceramic plates": "smooth plates heat evenly", "certipur certified": "foams tested for content and emissions",
    "charging case": "the pocket case adds hours of playtime", "charging station": "keeps phones charged within reach",
    "chip resistant": "resists chips and peeling for days", "chunky knit": "cozy, textured stitch",
    "classic buckle": "polished buckle goes with everything", "cloud storage": "clips are saved securely online",
    "clump free": "coats every lash evenly", "cold pressed": "pressed within hours of picking, without heat",
    "collagen": "for bouncy looking skin", "color treated hair": "keeps color vibrant wash after wash",
    "compact layout": "saves desk room for your mouse", "compact size": "small enough for any bag",
    "compostable bags": "tea bags made from plant material", "cool shot button": "locks in your style",
    "cooling gel": "gel infused foam draws heat away", "cotton blend": "soft, easy care fabric",
    "cotton twill": "sturdy woven fabric", "cruelty free": "never tested on animals",
    "curved brim": "pre shaped brim shades your eyes", "cushioned sole": "extra padding under the heel and toe",
    "cushioned stool": "padded stool for comfy seating", "dairy free": "made without milk or butter",
    "damaged hair": "repairs split ends and breakage", "dark spots": "fades the look of discoloration",
    "dash cam": "handles nonstop recording", "dashboard": "sticks firmly to the dash",
    "date display": "date window at 3 o'clock", "deep bass": "rich, punchy low end",
    "deep seats": "room to curl up and lounge", "detachable cable": "removable cable for easy travel",
    "detachable hood": "zip off hood for milder days", "detachable microphone": "remove the mic to just listen",
    "diffuser attachment": "defines curls and waves", "dolby vision": "supports hdr content",
    "double weft": "for thick, full volume", "dramatic volume": "full, fluffy lashes that make a statement",
    "drawstring hood": "adjustable hood", "drawstring waist": "adjustable waistband",
    "dry hair": "restores softness to rough, brittle strands", "dry roasted": "roasted without oil for a clean crunch",
    "dry skin": "deeply hydrates rough, flaky skin", "dual mode": "switch between two devices with one click",
    "dual motor": "two motors lift smoothly and quietly", "dual output": "charge two devices at once",
    "dual port": "charge two devices at once", "dual voltage": "works worldwide on 110 to 240 volts",
    "dust cover": "zippered cover keeps shoes clean", "early harvest": "olives picked green for a bold taste",
    "easy apply": "goes on in minutes", "easy assemble": "sets up in minutes with the included tools",
    "easy blend": "melts into the skin with a brush or fingertip", "easy clean": "rinses or wipes clean in seconds",
    "easy install": "installs in minutes with no special tools", "elastic waist": "comfortable pull on waistband",
    "entryway": "fits neatly by the front door", "ergonomic design": "keeps your wrists and neck relaxed",
    "ethernet": "shares an internet connection between devices", "etl listed": "tested to strict safety standards",
    "extension cord": "long cord reaches distant outlets", "fabric drawers": "soft bins pull out easily",
    "fair trade": "sourced from farmers who are paid fairly", "fast charging": "charges your devices quickly",
    "fast drying": "powerful motor dries hair in half the time", "fast heating": "ready to use in 30 seconds",
    "fast transfer": "moves large files in seconds", "fat free": "a sweet treat without the fat",
    "faux fur": "plush, cuddly cover", "faux leather": "wipe clean upholstery",
    "faux mink": "soft synthetic fibers with a luxe look", "faux suede": "soft brushed upper",
    "fiberglass free": "made without fiberglass", "fine hair": "adds body without weighing strands down",
    "fine lines": "softens the look of creases", "flat plug": "slim plug fits behind furniture",
    "fleece lined": "warm brushed lining inside", "flip up arms": "arms flip up so it slides under the desk",
    "floral notes": "a bouquet of rose, jasmine and peony", "foldable": "folds flat for storage",
    "foldable design": "folds flat to fit in a bag", "foldable handle": "folds for compact storage",
    "foldable plug": "prongs fold away for travel", "footrest": "for comfortable seating",
    "four way stretch": "moves with you in every direction", "fragrance free": "no added perfume",
    "fresh citrus": "a bright opening of bergamot and lemon", "freshly roasted": "shipped within days of roasting",
    "frizz free": "smooths flyaways for a sleek finish", "full coverage": "covers redness in one layer",
    "full grain": "cut from the strongest part of the hide", "full motion": "extend, tilt and turn for the best view",
    "gan technology": "gallium nitride parts run cooler in a smaller body", "genuine leather": "real cowhide",
    "gift box": "ready for gifting", "glass bottle": "dark glass protects freshness",
    "glass jar": "packed in a reusable jar", "glueless": "wear it without glue or tape",
    "gluten free": "made without gluten", "gold plated": "corrosion resistant connectors",
    "grass fed": "sourced from pasture raised cattle", "hair growth": "supports stronger, fuller looking hair",
    "handmade": "made by hand, pair by pair", "hands free": "take calls without reaching for your phone",
    "hard case": "protective case included", "hardware encryption": "256 bit encryption keeps files private",
    "heart rate": "monitors your pulse around the clock", "heat dissipation": "open design keeps your laptop cool",
    "heat resistant": "styles with heat tools up to 350 degrees", "heavy duty": "heavy steel frame built to last",
    "heavyweight": "thick fabric that holds its shape", "height adjustable": "raise or lower at the touch of a button",
    "hidden brackets": "brackets disappear for a clean look", "hidden compartment": "secret storage under the top",
    "hidden storage": "lid lifts to reveal roomy storage", "high back": "tall backrest supports your shoulders",
    "high definition": "crystal clear view of your screen", "high density": "thick, full hair from root to tip",
    "high density foam": "seats keep their shape for years", "high fiber": "keeps you full longer",
    "high gloss": "shiny, glass like finish", "high impact": "firm support for running and jumping",
    "high pigment": "rich color payoff in a single coat", "high polyphenol": "rich in natural antioxidants",
    "high protein": "packed with protein to keep you going", "high quality": "carefully made and inspected",
    "high speed": "fast, reliable data speeds", "high waist": "high rise waistband smooths and supports",
    "home office": "sized for a work corner", "hot swappable": "swap switches without soldering",
    "human hair": "100% real hair that can be styled like your own", "hyaluronic acid": "pulls moisture into the skin",
    "individually wrapped": "each one sealed for freshness", "insulated": "synthetic fill keeps you warm",
    "ipx7 waterproof": "survives rain, sweat and a dunk in water", "itch relief": "calms beard itch and flakes",
    "jojoba oil": "softens coarse hair", "kangaroo pocket": "roomy front pocket for your hands",
    "keto friendly": "low net carbs fit a keto lifestyle", "keyboard tray": "slide out tray saves room",
    "kids room": "bright and sturdy for little ones", "kitchen": "holds spices, mugs and cookbooks",
    "korean skincare": "inspired by seoul beauty routines", "kosher": "certified kosher",
    "lcd display": "shows the exact temperature", "leather band": "soft strap",
    "led display": "shows remaining battery at a glance", "led lights": "set the mood with colorful light",
    "left handed": "shaped for left hand users", "lift top": "top lifts up to a comfortable work height",
    "lighted mirror": "mirror with adjustable lights", "lightly salted": "just a touch of sea salt",
    "lightweight": "light enough to forget it is there", "linen fabric": "breathable woven upholstery",
    "living room": "made for the family room", "local storage": "saves footage to a card with no fees",
    "long battery": "up to 40 hours of playtime on one charge", "long lasting": "stays put for hours",
    "long sleeve": "full length sleeves", "low acid": "smooth and gentle on the stomach",
    "low calorie": "a light snack with fewer calories", "low carb": "fewer carbs than regular pasta",
    "low fat": "a lean, lighter snack", "low latency": "no lag between sound and action",
    "low light": "brightens dim rooms automatically", "low noise": "quiet motor that won't wake the house",
    "low profile": "sits close for a clean look", "low sodium": "less salt without losing flavor",
    "low sugar": "only a few grams of sugar", "lumbar support": "adjustable lower back cushion",
    "luminous hands": "hands glow in the dark", "mac compatible": "works with mac and windows",
    "machine wash": "toss it in the washer", "made in usa": "blended and bottled in oregon",
    "magnetic": "strong magnets hold your phone steady", "magsafe compatible": "snaps onto magnetic chargers",
    "matte finish": "soft, shine free look", "medium firm": "balanced feel for back, side and stomach sleepers",
    "medium support": "comfortable hold for yoga and walking", "memory foam": "plush cushioning that molds to you",
    "memory presets": "save your favorite heights", "merino wool": "soft fine wool that never itches",
    "mesh back": "airy back keeps you cool", "mesh lining": "soft liner for support",
    "message notifications": "see texts and calls on your wrist", "metal frame": "sturdy steel frame",
    "metal handles": "brushed metal pulls", "metal legs": "powder coated steel legs",
    "microsuede": "soft, velvety cover", "military grade": "drop tested to military standards",
    "minimalist design": "clean dial with no clutter", "moisture wicking": "pulls sweat away to keep you dry",
    "moisturizing": "leaves lips soft and hydrated", "monitor shelf": "raised shelf for better posture",
    "motion detection": "instant alerts when something moves", "motion isolation": "you won't feel a partner move",
    "msg free": "no added monosodium glutamate", "multi platform": "works with pc, ps5, xbox and switch",
    "multiple pockets": "room for cards, cash and keys", "narrow design": "slim depth fits tight spots",
    "natural finish": "skin like look that never turns cakey", "natural flavors": "flavored with real fruit essences",
    "natural hairline": "a realistic part that looks like your own", "natural ingredients": "botanical extracts",
    "natural looking": "blends right in with what you have", "negative ions": "ionic technology tames static",
    "nickel free": "safe for metal sensitivities", "night vision": "clear video even in total darkness",
    "nintendo switch": "works in handheld consoles", "no additives": "just pure syrup, nothing added",
    "no assembly": "ready to use right out of the box", "no box spring": "sturdy support replaces a foundation",
    "no fillers": "just spices, nothing else", "no nitrates": "cured without added nitrates",
    "no palm oil": "just peanuts and a pinch of salt", "no sugar added": "sweetened only by real ingredients",
    "noise cancelling": "blocks out traffic, engines and chatter", "noise free": "no squeaks or creaks",
    "non comedogenic": "won't clog pores", "non gmo": "made without genetically modified ingredients",
    "non greasy": "absorbs fast with no slick feel", "non slip": "grippy base stays in place",
    "non toxic": "made without the harshest chemicals", "nut free": "made in a facility without peanuts or tree nuts",
    "nylon braided": "tough jacket resists tangles and fraying", "odor resistant": "stays fresh for days",
    "oil free": "won't leave skin shiny", "one hand operation": "mount and release with one hand",
    "open front": "easy drape with no fastenings", "open shelf": "room for books and baskets",
    "open shelves": "room for consoles and decor", "open toe": "breezy, airy design",
    "outdoor use": "built for backyards and campsites", "overheat protection": "smart chip stops heat buildup",
    "overload protection": "cuts power if too much is plugged in", "oversized": "generous, on trend fit",
    "packable": "packs into its own pocket", "padded armrests": "soft cushioned arms",
    "padded seat": "thick cushioned seat", "paraben free": "made without parabens",
    "pbt keycaps": "durable keycaps that won't shine", "plant based": "made from pea and rice protein",
    "plug and play": "no software or drivers needed", "pointed toe": "elegant silhouette",
    "polarized": "cuts glare from water and roads", "portable": "light and easy to carry",
    "power outlets": "built in sockets for lamps and chargers", "pre plucked": "a natural part right out of the box",
    "pressure relief": "eases tension at hips and shoulders", "privacy cover": "slide cover blocks the lens",
    "quick dry": "dries fast after a swim", "racerback": "straps meet between the shoulder blades",
    "raised edges": "lip protects the screen and camera", "ratchet buckle": "micro adjustable for an exact fit",
    "rechargeable": "built in battery charges over a cable", "recycled fill": "warm fill made from recycled bottles",
    "reef safe": "made without oxybenzone and octinoxate", "regular fit": "classic cut with room to move",
    "reinforced cuffs": "tough cuffs resist ski edges", "reinforced heel": "extra durable heel and toe",
    "relaxed fit": "roomy through the seat and thigh", "removable cover": "zip off cover for washing",
    "removable cushions": "cushions zip off for cleaning", "removable pads": "take out the cups for custom coverage",
    "resealable bag": "keeps it fresh after opening", "reusable": "wear them again and again",
    "reversible": "two colors in one belt", "rfid blocking": "keeps your cards safe from skimmers",
    "rgb backlit": "customizable rainbow lighting under every key", "rgb lighting": "customizable rainbow glow",
    "ring light": "built in light for a bright picture", "rubber sole": "grippy outsole for wet rocks",
    "rugged design": "tough shell survives drops", "rustic finish": "hand distressed farmhouse look",
    "salt free": "flavor without the salt", "scratch resistant": "hard coating resists scratches",
    "sd adapter": "full size adapter included", "seamless": "smooth knit with no seams to rub",
    "sensitive eyes": "gentle for contact lens wearers", "sensitive skin": "gentle enough for easily irritated skin",
    "shea butter": "locks in moisture", "shimmer shades": "pearly tones that catch the light",
    "shock absorbing": "cushioning softens every landing", "shock resistant": "survives drops up to 6 feet",
    "shockproof": "absorbs bumps and drops", "short sleeve": "flattering sleeves that hit mid arm",
    "side pockets": "handy pockets for your phone", "side zipper": "inside zipper for easy on and off",
    "silent click": "quiet clicks for shared spaces", "single origin": "from one region for a distinct taste",
    "single serve": "portioned packs for easy snacking", "sleep tracking": "tracks light, deep and rem sleep",
    "sleeveless": "cool cut for hot days", "slim design": "thin profile adds almost no bulk",
    "slim fit": "tailored close to the body", "small batch": "made in small batches",
    "small spaces": "compact footprint for apartments and dorms", "smocked waist": "stretchy gathered waist",
    "smudge proof": "won't smear or flake", "sodium free": "no sodium at all",
    "soft bristles": "ultra gentle on skin", "soft cotton": "cozy, breathable fabric", "soft knit": "cozy, plush knit",
    "solid wood": "built from real hardwood", "soothing": "calms redness and irritation",
    "soy free": "made without soy", "space saving": "holds more in less floor space",
    "spf 30": "protects skin from daily sun", "spf 50": "high protection for long days outside",
    "spread collar": "modern collar frames a tie", "spring hinges": "flexible arms for a comfortable fit",
    "squat proof": "opaque fabric passes the squat test",
    "stackable": "stack them to save room", "stain resistant": "fabric resists spills",
    "stainless steel": "durable case that won't rust", "step counter": "counts every step",
    "stereo pairing": "pair two speakers for a bigger sound", "storage cabinets": "closed cabinets hide clutter",
    "storage drawer": "a drawer for the little things", "storage drawers": "drawers for makeup and jewelry",
    "storage shelf": "lower shelf for books and baskets", "storage shelves": "shelves for books and supplies",
    "storage space": "plenty of room for everything", "straight leg": "classic cut from hip to hem",
    "stretch denim": "a bit of give for comfort", "stretch fabric": "flexible fabric moves with you",
    "strong suction": "suction cup holds on tight", "sulfate free": "cleans gently without stripping moisture",
    "sun protection": "wide brim keeps the sun off your face", "surround sound": "positional audio hears every step",
    "sweatproof": "keeps working through hard workouts", "swivel arm": "extends for better viewing angles",
    "swivel base": "turns 360 degrees", "swivel seat": "seat turns 360 degrees",
    "synthetic bristles": "soft fibers that hold their shape", "tangle free": "stays smooth and easy to brush",
    "tapered leg": "narrows from knee to ankle", "tea tree": "refreshes the scalp",
    "temperature proof": "works from freezing cold to desert heat", "tempered glass": "tough glass top",
    "thick cases": "works with bulky cases", "thick cushions": "plush seat and back",
    "third party tested": "checked by an independent lab", "tiered ruffle": "layered skirt with movement",
    "tilting": "angle the screen to cut glare", "titanium plates": "plates heat fast and evenly",
    "touch control": "tap to play, pause and skip", "touch sensitive": "keeps the touchscreen responsive",
    "travel case": "zip case for trips", "travel size": "small enough for a carry on",
    "trim to fit": "cut to your exact size", "tummy control": "smooths and supports the midsection",
    "two way audio": "talk and listen through the camera", "under bed storage": "room for bins under the bed",
    "unfiltered": "keeps the pollen and flavor intact", "unisex": "fits men and women",
    "universal compatibility": "works with phones, tablets and laptops", "unpasteurized": "never heated",
    "unsalted": "no added salt", "unsulfured": "no sulfur dioxide", "upf 50": "blocks most uv rays",
    "upholstered headboard": "padded headboard for reading in bed", "upholstered seat": "padded fabric seat",
    "usb c": "modern reversible port", "usb ports": "charge phones right from the strip",
    "usb receiver": "tiny receiver stores inside", "usda organic": "certified organic ingredients",
    "uv protection": "blocks uva and uvb rays", "v neck": "flattering neckline", "vegan": "no animal ingredients",
    "vegan leather": "soft animal free leather", "velvet upholstery": "soft, plush upholstery",
    "vesa compatible": "fits standard mounting patterns", "wall mountable": "keyhole slots for mounting",
    "washed cotton": "soft, broken in feel", "water resistant": "shrugs off rain and splashes",
    "waterproof": "keeps water out", "weatherproof": "stands up to rain, snow and heat",
    "whole grain": "made with whole grains", "wide angle": "wide view fits the whole room",
    "wide toe box": "room for your toes to spread", "wide top": "spacious top for a tv or decor",
    "wide width": "roomy fit for wide feet", "widely spaced outlets": "room for bulky adapters",
    "windproof": "blocks cold wind", "wire free": "no underwire for all day comfort",
    "wireless charging": "charge without cables", "wood legs": "sturdy hardwood legs",
    "wood slats": "sturdy slats support the mattress", "wooden handles": "natural handles with a sure grip",
    "woody notes": "a warm cedar and sandalwood base", "wrinkle free": "comes out of the dryer ready to wear",
    "wrist rest": "magnetic rest for your wrists", "zero calorie": "all flavor, nothing else",
    "zinc oxide": "mineral protection", "zip pockets": "secure pockets for essentials",
    "zipper closure": "secure top zipper",
}

BRANDS = {
    "beauty": "Aurelle|Avelune|Belmora|Bloomvale|Calmira|Clovera|Dewbright|Elowen|Everbloom|Fernly|Glowra|Hazelune|"
              "Iris & Sage|Juniperly|Lumera|Lunessa|Maisonette|Mirabelle|Nuvelle|Orchidia|Petalis|Rosewick|Saffrona|"
              "Serenza|Silkora|Solvane|Velvetine|Verdello|Willowmere|Zephyra",
    "food": "Acorn Hollow|Amberfield|Barrow Farms|Bluebarn|Brightacre|Cedar Creek Pantry|Copper Kettle|Fieldstone|"
            "Golden Orchard|Good Grain|Greenhollow|Harvest Lane|Hearthside|Honeybrook|Little Sprout|Maple Ridge|"
            "Meadowlyn|Millstone|Nutwood|Old Mill Road|Orchard Bloom|Pantry Pals|Prairie Gold|Rustic Pantry|"
            "Sunny Meadow|Thistle Farms|Wild Acre|Willow Creek|Wholesome Roots|Yarrow Valley",
    "fashion": "Alder & Ash|Bellamy Row|Cobble Lane|Driftline|Everly Jane|Fable & Thread|Foxmere|Glenmoor|"
               "Hudson Pike|Ivy Marlowe|Jasper Crane|Kinsley Park|Larkspire|Linden Rose|Marlow & Finch|Northpeak|"
               "Oakley Reed|Pebble & Pine|Quill Street|Ravenbrook|Sable Coast|Sparrowly|Stonebury|Summit Ridge|"
               "Tallis & Co|Thistledown|Trailborn|Wrenfield|Westvale|Yellowpine",
    "furniture": "Aldenbrook|Arborly|Birchwick|Casa Lumen|Cedarly|Crestmoor|Dawnridge|Elmcrest|Emberly Home|"
                 "Hearthstone Home|Hollowpine|Ironbark|Kindlewood|Loftline|Maplecrest|Mossgrove|Nestwell|"
                 "Oak & Ember|Oakhaven|Pinecrest Living|Roomwell|Sablewood|Sagebrook|Timberlane|Umberly|Valemont|"
                 "Woodvale|Wrenhaus|Yardley & Co|Zenwood",
    "electronics": "Amplio|Arcwave|Boltra|Cirrux|Dynaq|Ezvolt|Fluxon|Gridlyne|Hertzio|Kinetra|Lumitek|Magnova|Neonix|"
                   "Nexora|Ohmly|Pixelar|Pulsaro|Qubix|Sonivo|Syncora|Tecvane|Tronvik|Ultrix|Vexon|Voltrix|Wavemint|"
                   "Zentrova|Zolta|Zypher|Kestrix",
}

# Attributes that contradict each other; a product gets at most one of each group.
EXCLUSIVE = (
    {"slim fit", "regular fit", "relaxed fit", "athletic fit"}, {"straight leg", "tapered leg"},
    {"matte finish", "natural finish"}, {"lightly salted", "unsalted"}, {"ceramic plates", "titanium plates"},
    {"high impact", "medium support"}, {"open front", "button front"}, {"short sleeve", "sleeveless"},
)

# ================================================================ text templates
OPENERS = ("i am looking for", "i'm looking for", "i want to buy", "i need", "find me", "i would like",
           "i'm searching for", "get me", "i want", "help me find", "i am shopping for", "search for",
           "show me", "i'd like to buy", "i'm trying to find")
OPTION_PHRASES = {
    "color": ("in {v} color", "in the color {v}", "in {v}"),
    "size": ("in size {v}", "in {v} size", "in a size {v}"),
    "scent": ("in {v} scent", "with a {v} scent"),
    "flavor name": ("in {v} flavor", "with {v} flavor", "in the {v} flavor"),
    "style": ("in {v} style", "in the {v} style", "style {v}"),
    "item package quantity": ("in {a} {v}", "as {a} {v}"),
    "pattern name": ("in {v} pattern", "with a {v} pattern"),
    "material": ("in {v} material", "made of {v}"),
    "capacity": ("with {v} capacity", "in {v} capacity", "in {v}"),
}
LABEL_STYLES = ("{label}: {text}", "{label} - {text}", "【{label}】 {text}", "{label} — {text}")
LABEL_PREFIX = {"a": "", "f": "GREAT FOR ", "i": "PACKED IN A ", "w": "WITH "}
FEATURE_PREFIX = {"a": "", "f": "made for ", "i": "packed in a ", "w": "with "}
INTROS = ("The {brand} {head} {is} made for {use}.", "Meet the {brand} {head}, designed with {use} in mind.",
          "{brand} built {this} {head} for {use}.", "Shopping for {use}? The {brand} {head} {is} a great pick.")
FEATURE_LEADS = ("Key features: {items}.", "Highlights: {items}.", "What customers love: {items}.",
                 "Why choose it: {items}.")
USE_LINES = ("Perfect for {use}.", "A favorite for {use}.", "Ideal for {use} and everyday life.")
CLOSINGS = ("Backed by a 30-day money back guarantee.", "Questions? Our customer service team replies within 24 hours.",
            "Thank you for choosing {brand}.", "Makes a thoughtful gift for family and friends.",
            "Satisfaction guaranteed or your money back.")
REVIEW_TITLES = {5: ("Love it!", "Exactly what I needed", "Highly recommend", "Five stars", "Great buy"),
                 4: ("Pretty good", "Good value for the price", "Works well", "Happy with it"),
                 3: ("It's okay", "Decent, not amazing", "Average", "Mixed feelings"),
                 2: ("Disappointed", "Not as described", "Expected better"),
                 1: ("Waste of money", "Would not buy again", "Returned it")}
REVIEW_BODIES = {
    "good": ("I bought {this} for {use} and {it_is} exactly what I wanted.",
             "Great quality for the price. {brand} did a nice job.",
             "Arrived quickly and looks just like the pictures.", "Second time ordering. Would recommend to friends."),
    "mixed": ("{It_is} fine for {use}, but not as nice as I expected.", "Does the job. Shipping took a while.",
              "Decent for the price, though the quality could be better."),
    "bad": ("Not what I expected, so I returned {it}.", "Did not hold up and I would not buy again.",
            "The pictures look much better than the real thing."),
}
SMALL_WORDS = frozenset({"a", "an", "and", "for", "in", "of", "on", "or", "the", "to", "with"})
ACRONYMS = frozenset({"usb", "hdmi", "ssd", "led", "tv", "rgb", "lcd", "spf", "uv", "hd", "gps", "dpi", "pbt", "etl",
                      "vesa", "usa", "gmo", "usda", "bpa", "msg", "upf", "rfid", "gan", "ps5", "ipx7", "9h", "a2", "c"})
ASIN_CHARS = string.ascii_uppercase + string.digits
# Attributes ending so read as nouns: "a slim design iphone case", never "an iphone case that is slim design".
NOUN_ENDINGS = ("design", "size", "frame", "wood", "relief", "leather", "hair", "alloy", "steel", "glass", "layout",
                "motor", "grain", "fit", "knit", "hd", "video", "heel", "toe", "neck", "sleeve", "leg", "lift", "top")


# ================================================================ helpers
def seed_of(*parts) -> int:
    return int.from_bytes(hashlib.sha256("/".join(map(str, parts)).encode()).digest()[:8], "little")


def kind(attribute: str) -> str:
    """Where an instruction puts the attribute: a (before the noun), f (for ...), i (in a ...), w (with ...)."""
    if attribute in FOR_ATTRS:
        return "f"
    if attribute in IN_ATTRS:
        return "i"
    return "w" if attribute in WITH_ATTRS else "a"


def titled(phrase: str) -> str:
    """'non gmo' -> 'Non GMO', 'x-large' -> 'X-Large', '30w' -> '30W'; only letter case changes."""
    words = []
    for i, word in enumerate(phrase.split(" ")):
        if word in ACRONYMS:
            words.append(word.upper())
        elif i and word in SMALL_WORDS:
            words.append(word)
        elif word[:1].isdigit():
            words.append(word.upper() if word.endswith(("gb", "tb", "w")) else word)
        else:
            words.append("-".join(part[:1].upper() + part[1:] for part in word.split("-")))
    return " ".join(words)


def sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith((".", "!", "?")) else ".")


def join_and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def leaks(text: str, banned: list[str]) -> bool:
    """Does the text name an attribute the product lacks? (WebShop credits attributes found in the text.)"""
    lowered = text.lower()
    return any(b in lowered for b in banned)


def clean(texts: Iterable[str], banned: list[str]) -> list[str]:
    return [t for t in texts if not leaks(t, banned)]


def is_plural(t: ProductType) -> bool:
    return not t.mass and t.query.endswith("s") and not t.query.endswith("ss")


def article(phrase: str) -> str:
    """'a' or 'an' by sound: 'an 8 pack', 'an hdmi cable', 'a usda organic ...'."""
    vowel = phrase[0] in "aeiou8" or phrase.startswith(("11 ", "18 "))
    spelled = phrase.split(" ", 1)[0] in {"hdmi", "rfid", "led", "lcd", "spf", "msg", "upf", "hd"}
    return "an" if (vowel and not phrase.startswith(("us", "uni", "one"))) or spelled else "a"


def with_article(phrase: str, t: ProductType) -> str:
    return phrase if t.mass or is_plural(t) else f"{article(phrase)} {phrase}"


def prices_of(pricing: str) -> list[float]:
    """WebShop's price parser (web_agent_site/engine/engine.py): '$10.99 - $15.99' -> [10.99, 15.99]."""
    return [float(re.sub(r"[^\d.]", "", p)) for p in pricing.split("$")[1:]]


def price_upper(max_price: float, rng: random.Random) -> float:
    """WebShop's budget: the larger of two of the first four grid prices above the product's price."""
    candidates = [p for p in PRICE_RANGE if p > max_price][:4]
    if len(candidates) >= 2:
        return sorted(rng.sample(candidates, 2))[1]
    return candidates[0]


def indel_ratio(a: str, b: str) -> float:
    """rapidfuzz's fuzz.ratio: 100 * 2 * LCS / (len(a) + len(b))."""
    if not a and not b:
        return 100.0
    row = [0] * (len(b) + 1)
    for ch in a:
        prev = 0
        for j, other in enumerate(b):
            prev, row[j + 1] = row[j + 1], prev + 1 if ch == other else max(row[j + 1], row[j])
    return 200.0 * row[-1] / (len(a) + len(b))


def token_set_ratio(a: str, b: str) -> float:
    """thefuzz's token_set_ratio, which WebShop's reward thresholds at 85: lowercased, punctuation as spaces
    ("x-large" has the tokens "x" and "large"), then rapidfuzz's formula."""
    ta, tb = (set(re.sub(r"[^0-9a-z]", " ", s.lower()).split()) for s in (a, b))
    if not ta or not tb:
        return 0.0
    common, only_a, only_b = sorted(ta & tb), sorted(ta - tb), sorted(tb - ta)
    if common and (not only_a or not only_b):
        return 100.0
    sect, left, right = " ".join(common), " ".join(common + only_a), " ".join(common + only_b)
    scores = [indel_ratio(left, right)]
    if sect:
        scores += [indel_ratio(sect, left), indel_ratio(sect, right)]
    return max(scores)


def require(ok: bool, message: str) -> None:
    if not ok:
        raise SystemExit(f"make_webshop_data: {message}")


# ================================================================ products
def draw_attrs(t: ProductType, rng: random.Random) -> list[str]:
    n = rng.randint(2, min(5, len(t.attrs)))
    picked: list[str] = []
    for a in rng.sample(t.attrs, len(t.attrs)):
        if len(picked) < n and not any(a in group and p in group for group in EXCLUSIVE for p in picked):
            picked.append(a)
    return sorted(picked, key=t.attrs.index)


def draw_options(t: ProductType, rng: random.Random) -> dict[str, list[str]]:
    names = list(t.options)
    if rng.random() < NO_OPTIONS_SHARE:
        return {}
    chosen = sorted(rng.sample(names, rng.randint(1, min(3, len(names)))), key=names.index)
    options = {}
    for name in chosen:
        pool = t.options[name]
        options[name] = sorted(rng.sample(pool, rng.randint(2, min(8, len(pool)))), key=pool.index)
    return options


def draw_pricing(t: ProductType, rng: random.Random) -> str:
    low = max(2, round(rng.uniform(*t.price))) - rng.choice((0.01, 0.01, 0.05, 0.51))
    if rng.random() >= RANGE_PRICE_SHARE:
        return f"${low:.2f}"
    high = min(979, round(low * rng.uniform(1.15, 1.7))) - 0.01
    return f"${low:.2f}" if high <= low + 1 else f"${low:.2f} - ${high:.2f}"


def make_title(t: ProductType, rng: random.Random, brand: str, head: str, shown: list[str], banned: list[str]) -> str:
    adjs = [a for a in shown if kind(a) == "a"]
    words = [brand, *(titled(a) for a in rng.sample(adjs, min(len(adjs), rng.randint(0, 2)))), head]
    title = " ".join(words)
    fors, withs = [a for a in shown if kind(a) == "f"], [a for a in shown if kind(a) == "w"]
    if fors and rng.random() < 0.5:
        title += " for " + titled(rng.choice(fors))
    elif withs and rng.random() < 0.4:
        title += " with " + titled(rng.choice(withs))
    extras = clean(t.extras, banned)
    if extras and rng.random() < 0.75:
        title += ", " + rng.choice(extras)
    return title


def make_bullets(t: ProductType, rng: random.Random, shown: list[str], banned: list[str]) -> list[str]:
    style, n = rng.choice(LABEL_STYLES), rng.randint(3, 5)
    own = [style.format(label=LABEL_PREFIX[kind(a)] + a.upper(), text=sentence(CLAUSES[a])) for a in shown]
    own = clean(own, banned)[: n - 1]
    feats = clean(t.feats, banned)
    return own + [sentence(f) for f in rng.sample(feats, min(len(feats), n - len(own)))]


def make_description(t: ProductType, rng: random.Random, brand: str, head: str, shown: list[str],
                     banned: list[str]) -> str:
    first_use, second_use = rng.sample(t.uses, 2)
    items = join_and([FEATURE_PREFIX[kind(a)] + a for a in shown])
    core = re.split(r" (?:for|of|in|with) ", head)[0]  # "Chest of Drawers" is one chest
    plural = core.endswith("s") and not core.endswith("ss")
    words = {"is": "are" if plural else "is", "this": "these" if plural else "this"}
    first = [rng.choice(INTROS).format(brand=brand, head=head, use=first_use, **words),
             rng.choice(FEATURE_LEADS).format(items=items), sentence(rng.choice(t.feats))]
    second = [rng.choice(USE_LINES).format(use=second_use), rng.choice(CLOSINGS).format(brand=brand)]
    return " ".join(clean(first, banned)) + "\n\n" + " ".join(clean(second, banned))


def make_reviews(t: ProductType, rng: random.Random, brand: str, rating: float | None) -> list[dict]:
    if rating is None:
        return []
    plural = is_plural(t)
    words = {"this": "these" if plural else "this", "it": "them" if plural else "it",
             "it_is": "they are" if plural else "it is", "It_is": "They are" if plural else "It is"}
    reviews = []
    for _ in range(rng.choice((0, 1, 1, 2, 2, 3, 3))):
        score = min(5, max(1, round(rating) + rng.choice((-3, -2, -1, -1, 0, 0, 0, 0, 1))))
        band = "good" if score >= 4 else "mixed" if score == 3 else "bad"
        body = rng.choice(REVIEW_BODIES[band]).format(use=rng.choice(t.uses), brand=brand, **words)
        reviews.append({"score": score, "title": rng.choice(REVIEW_TITLES[score]), "body": body})
    return reviews


def make_product(t: ProductType, rng: random.Random, brand: str) -> tuple[dict, list[str]]:
    """One product in WebShop's items_shuffle schema, and its attributes (items_ins_v2)."""
    attrs = draw_attrs(t, rng)
    shown = [a for a in attrs if rng.random() < 0.85] or attrs[:1]  # attributes the text mentions
    banned = [a for a in t.attrs if a not in attrs]
    head = rng.choice(clean(t.heads, banned) or list(t.heads))
    rating = None if rng.random() < 0.08 else max(rng.randint(30, 50), rng.randint(30, 50)) / 10
    reviews = make_reviews(t, rng, brand, rating)
    product = {
        "asin": "",
        "category": t.category,
        "query": t.query,
        "name": make_title(t, rng, brand, head, shown, banned),
        "full_description": make_description(t, rng, brand, head, shown, banned),
        "pricing": draw_pricing(t, rng),
        "images": [],
        "product_category": t.crumb,
        "average_rating": rating,
        "total_reviews": 0 if rating is None else len(reviews) + rng.randint(0, 10 ** rng.randint(1, 4)),
        "small_description": make_bullets(t, rng, shown, banned),
        "customization_options": {name: [{"value": titled(v), "image": None} for v in values]
                                  for name, values in draw_options(t, rng).items()},
        "reviews": reviews,
    }
    return product, attrs


def make_products(t: ProductType, seed: int, asins: set[str], titles: set[str]) -> list[tuple[dict, list[str]]]:
    rng = random.Random(seed_of(seed, "products", t.query))
    brands = BRANDS[t.category].split("|")
    made = []
    for _ in range(rng.randint(*PRODUCTS_PER_TYPE)):
        for _attempt in range(50):
            product, attrs = make_product(t, rng, rng.choice(brands))
            if product["name"] not in titles:
                break
        require(product["name"] not in titles, f"{t.query}: no unused title after 50 draws")
        titles.add(product["name"])
        asin = ""
        while not asin or asin in asins:
            asin = "B0" + "".join(rng.choice(ASIN_CHARS) for _ in range(8))
        asins.add(asin)
        product["asin"] = asin
        made.append((product, attrs))
    return made


# ================================================================ goals
def instruction(t: ProductType, attrs: list[str], options: list[tuple[str, str]], upper: float,
                rng: random.Random) -> str:
    """A WebShop-style human instruction naming the type, every attribute and option, and the budget."""
    by_kind = {k: [a for a in attrs if kind(a) == k] for k in "afiw"}
    adjs = by_kind["a"]
    if adjs and rng.random() < 0.3 and not any(a.endswith(NOUN_ENDINGS) for a in adjs):
        phrase = f"{t.query} that {'are' if is_plural(t) else 'is'} {join_and(adjs)}"
    else:
        phrase = " ".join(adjs + [t.query])
    phrase = with_article(phrase, t)
    for k, joint in (("f", " for "), ("i", " in a "), ("w", " with ")):
        if by_kind[k]:
            phrase += joint + join_and(by_kind[k])
    text = f"{rng.choice(OPENERS)} {phrase}"
    if options:
        parts = [rng.choice(OPTION_PHRASES[name]).format(v=value, a=article(value)) for name, value in options]
        text += rng.choice((" ", " ", ", ")) + join_and(parts)
    return f"{text}, and price lower than {upper:.2f} dollars"


def option_values(product: dict) -> set[str]:
    """Every option value of the product, lower-cased as WebShop loads them."""
    return {o["value"].lower() for opts in product["customization_options"].values() for o in opts}


def satisfies(product: dict, attrs: list[str], goal: dict) -> bool:
    """Would buying ``product`` earn the goal's full reward (exact matching; the pools are fuzzy-distinct)?"""
    return (set(goal["attributes"]) <= set(attrs) and set(goal["goal_options"]) <= option_values(product)
            and min(prices_of(product["pricing"])) <= goal["price_upper"])


def make_goal(t: ProductType, target: tuple[dict, list[str]], others: list[tuple[dict, list[str]]],
              rng: random.Random, texts: set[str]) -> dict | None:
    """A goal for ``target`` in WebShop's resolved goal schema; of up to 30 draws, the first that no other
    product of the type fully satisfies, else the first unused one (None when every draw was taken)."""
    product, attrs = target
    options, names = product["customization_options"], list(product["customization_options"])
    fallback = None
    for _attempt in range(30):
        wanted = sorted(rng.sample(attrs, min(len(attrs), rng.choice((1, 2, 2, 3)))), key=attrs.index)
        k = 0 if not names or rng.random() < 0.05 else rng.randint(1, len(names))
        chosen = [(n, rng.choice(options[n])["value"].lower()) for n in sorted(rng.sample(names, k), key=names.index)]
        upper = price_upper(max(prices_of(product["pricing"])), rng)
        text = instruction(t, wanted, chosen, upper, rng)
        if text in texts:
            continue
        goal = {"asin": product["asin"], "category": t.category, "query": t.query, "name": product["name"],
                "product_category": t.crumb, "instruction_text": text, "attributes": wanted,
                "goal_options": [value for _, value in chosen], "price_upper": upper, "weight": 1.0}
        if not any(satisfies(p, a, goal) for p, a in others if p is not product):
            fallback = goal
            break
        fallback = fallback or goal
    if fallback is not None:
        texts.add(fallback["instruction_text"])
    return fallback


def make_goals(t: ProductType, products: list[tuple[dict, list[str]]], seed: int, texts: set[str]) -> list[dict]:
    rng = random.Random(seed_of(seed, "goals", t.query))
    goals = []
    for target in products:
        for _ in range(1 + (rng.random() < EXTRA_GOAL_SHARE)):
            goal = make_goal(t, target, products, rng, texts)
            if goal is not None:
                goals.append(goal)
    return goals


def assign_splits(goals: list[dict], seed: int) -> None:
    """About ``TEST_SHARE`` of the target products go to test, with all their goals."""
    asins = sorted({g["asin"] for g in goals})
    random.Random(seed_of(seed, "split")).shuffle(asins)
    test = set(asins[: round(TEST_SHARE * len(asins))])
    for g in goals:
        g["split"] = "test" if g["asin"] in test else "train"


# ================================================================ checks
def check_taxonomy(types: list[ProductType]) -> None:
    """Pools WebShop's fuzzy matching can tell apart, and text for every attribute."""
    require(len({t.query for t in types}) == len(types), "two product types share a query")
    known = {a for t in types for a in t.attrs}
    require(not (FOR_ATTRS | IN_ATTRS | WITH_ATTRS | set(CLAUSES)) - known, "a kind or text for an unknown attribute")
    require(not (FOR_ATTRS & IN_ATTRS or FOR_ATTRS & WITH_ATTRS or IN_ATTRS & WITH_ATTRS), "an attribute of two kinds")
    for t in types:
        require(6 <= len(t.attrs) <= 12 and len(set(t.attrs)) == len(t.attrs), f"{t.query}: 6 to 12 attributes")
        require(all(a in CLAUSES for a in t.attrs), f"{t.query}: no bullet text for {set(t.attrs) - set(CLAUSES)}")
        require(len(t.crumb.split(" › ")) >= 3 and t.query == t.query.lower(), f"{t.query}: query or breadcrumb")
        require(t.options and set(t.options) <= set(OPTION_PHRASES), f"{t.query}: unknown option type")
        require(t.price[1] < 900 and len(t.uses) >= 2 and len(t.feats) >= 3, f"{t.query}: price, uses or feats")
        values = [v for pool in t.options.values() for v in pool]
        require(len(set(values)) == len(values), f"{t.query}: an option value appears twice")
        require(all(len(pool) >= 2 for pool in t.options.values()), f"{t.query}: an option pool under 2 values")
        require(all(v == v.lower() and "/" not in v for v in values), f"{t.query}: option values lowercase, no '/'")
        for pool, what in ((t.attrs, "attributes"), (values, "option values")):
            for i, a in enumerate(pool):
                for b in pool[i + 1:]:
                    score = token_set_ratio(a, b)
                    require(score <= FUZZY_THRESHOLD, f"{t.query}: {what} {a!r} and {b!r} fuzzy match ({score:.0f})")


def check_product(p: dict, attrs: list[str], t: ProductType) -> None:
    asin = p["asin"]
    require(re.fullmatch(r"B0[A-Z0-9]{8}", asin) is not None, f"bad asin {asin}")
    require(re.fullmatch(r"\$\d+\.\d\d( - \$\d+\.\d\d)?", p["pricing"]) is not None, f"{asin}: pricing")
    require(max(prices_of(p["pricing"])) < PRICE_RANGE[-1], f"{asin}: price beyond WebShop's budget grid")
    require(3 <= len(p["small_description"]) <= 5, f"{asin}: 3 to 5 bullet points")
    require(p["average_rating"] is None or 3.0 <= p["average_rating"] <= 5.0, f"{asin}: rating")
    require(0 <= len(p["reviews"]) <= 3 and p["total_reviews"] >= len(p["reviews"]), f"{asin}: reviews")
    require(2 <= len(attrs) <= 5 and set(attrs) <= set(t.attrs), f"{asin}: attributes")
    options = p["customization_options"]
    require(len(options) <= 3 and all(2 <= len(v) <= 8 for v in options.values()), f"{asin}: options")
    require(len(option_values(p)) == sum(map(len, options.values())), f"{asin}: an option value twice")
    text = " ".join([p["name"], *p["small_description"], p["full_description"]])
    missing = [a for a in t.attrs if a not in attrs]
    require(not leaks(text, missing), f"{asin}: its text names an attribute it lacks")


def check_goal(g: dict, product: dict, attrs: list[str]) -> None:
    text, asin = g["instruction_text"], g["asin"]
    require(1 <= len(g["attributes"]) <= 3 and set(g["attributes"]) <= set(attrs), f"{asin}: goal attributes")
    values = {name: {o["value"].lower() for o in opts} for name, opts in product["customization_options"].items()}
    used: set[str] = set()
    for option in g["goal_options"]:
        names = [n for n, vs in values.items() if option in vs and n not in used]
        require(len(names) == 1, f"{asin}: goal option {option!r} is not one value of a distinct option type")
        used.add(names[0])
    require(g["price_upper"] > max(prices_of(product["pricing"])) and g["price_upper"] in PRICE_RANGE,
            f"{asin}: price_upper")
    require(text == text.lower() and g["query"] in text, f"{asin}: instruction must be lowercase and name the type")
    require(all(x in text for x in g["attributes"] + g["goal_options"]), f"{asin}: instruction misses a term")
    require(text.endswith(f", and price lower than {g['price_upper']:.2f} dollars"), f"{asin}: instruction ending")
    require(g["name"] == product["name"] and g["product_category"] == product["product_category"]
            and g["category"] == product["category"], f"{asin}: goal and product disagree")


def validate(products: list[dict], attributes: dict[str, list[str]], goals: list[dict],
             types: dict[str, ProductType]) -> None:
    """Fail loudly (SystemExit) before anything is written."""
    by_asin = {p["asin"]: p for p in products}
    require(len(by_asin) == len(products), "asins are not unique")
    require(len({p["name"] for p in products}) == len(products), "titles are not unique")
    require(set(attributes) == set(by_asin), "items_ins_v2 and the products list different asins")
    require(len({g["instruction_text"] for g in goals}) == len(goals), "two goals share an instruction")
    for p in products:
        check_product(p, attributes[p["asin"]], types[p["query"]])
    for g in goals:
        require(g["asin"] in by_asin, f"goal for unknown asin {g['asin']}")
        check_goal(g, by_asin[g["asin"]], attributes[g["asin"]])
    test = [g for g in goals if g["split"] == "test"]
    require(len(products) >= MIN_PRODUCTS and len(goals) >= MIN_GOALS, f"{len(products)} products, {len(goals)} goals")
    require(len(test) >= MIN_TEST_GOALS and 0.15 <= len(test) / len(goals) <= 0.25, f"{len(test)} test goals")
    for split in ("train", "test"):
        present = {g["category"] for g in goals if g["split"] == split}
        require(present == set(CATEGORIES), f"{split} lacks goals of {set(CATEGORIES) - present}")
    split_of: dict[str, str] = {}
    for g in goals:
        require(split_of.setdefault(g["asin"], g["split"]) == g["split"], f"{g['asin']}: goals in both splits")


def distractor_shares(goals: list[dict], products: list[dict], attributes: dict[str, list[str]]) -> dict:
    """Shares of goals with another product of the type that has some, but not all, of the goal's attributes
    and options (partial credit), and with one that satisfies the whole goal (full credit)."""
    by_query: dict[str, list[dict]] = {}
    for p in products:
        by_query.setdefault(p["query"], []).append(p)
    partial = full = 0
    for g in goals:
        wanted = set(g["attributes"]) | set(g["goal_options"])
        others = [p for p in by_query[g["query"]] if p["asin"] != g["asin"]]
        shared = [len(wanted & (set(attributes[p["asin"]]) | option_values(p))) for p in others]
        partial += any(0 < n < len(wanted) for n in shared)
        full += any(satisfies(p, attributes[p["asin"]], g) for p in others)
    return {"partial_credit_distractor": round(partial / len(goals), 4),
            "full_credit_distractor": round(full / len(goals), 4)}


# ================================================================ output
def json_lines(records: list) -> str:
    """A JSON list with one compact record per line (diff friendly, deterministic)."""
    rows = [json.dumps(r, ensure_ascii=False, sort_keys=True, separators=(",", ":")) for r in records]
    return "[\n" + ",\n".join(rows) + "\n]\n"


def write(out: Path, products: list[dict], attributes: dict[str, list[str]], goals: list[dict]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, filename="") as fh:  # no timestamp, no name
        fh.write(json_lines(products).encode("utf-8"))
    (out / "items_shuffle.json.gz").write_bytes(buffer.getvalue())
    rows = [json.dumps(asin) + ":" + json.dumps({"attributes": attributes[asin]}, ensure_ascii=False,
                                                separators=(",", ":")) for asin in sorted(attributes)]
    (out / "items_ins_v2.json").write_text("{\n" + ",\n".join(rows) + "\n}\n", encoding="utf-8", newline="\n")
    (out / "goals.json").write_text(json_lines(goals), encoding="utf-8", newline="\n")


def build(seed: int) -> tuple[list[dict], dict[str, list[str]], list[dict], dict[str, ProductType]]:
    types = {t.query: replace(t, category=c) for c in CATEGORIES for t in TAXONOMY[c]}
    check_taxonomy(list(types.values()))
    asins: set[str] = set()
    titles: set[str] = set()
    texts: set[str] = set()
    products, attributes, goals = [], {}, []
    for t in types.values():
        made = make_products(t, seed, asins, titles)
        goals += make_goals(t, made, seed, texts)
        for product, attrs in made:
            products.append(product)
            attributes[product["asin"]] = attrs
    rng = random.Random(seed)
    rng.shuffle(products)  # items_shuffle: categories mixed in file order
    rng.shuffle(goals)
    assign_splits(goals, seed)
    return products, attributes, goals, types


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "agentgym/data/webshop")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    products, attributes, goals, types = build(args.seed)
    validate(products, attributes, goals, types)
    write(args.out, products, attributes, goals)
    per_category = Counter(p["category"] for p in products)
    goal_counts = Counter((g["category"], g["split"]) for g in goals)
    stats = {
        "products": len(products), "goals": len(goals), "product_types": len(types),
        "train": sum(g["split"] == "train" for g in goals), "test": sum(g["split"] == "test" for g in goals),
        "per_category": {c: {"products": per_category[c], "train": goal_counts[c, "train"],
                             "test": goal_counts[c, "test"]} for c in CATEGORIES},
        "products_without_options": sum(not p["customization_options"] for p in products),
        "range_prices": sum(" - " in p["pricing"] for p in products),
        "goals_without_options": sum(not g["goal_options"] for g in goals),
        **distractor_shares(goals, products, attributes),
        "seconds": round(time.perf_counter() - start, 2),
    }
    print(json.dumps(stats, indent=2))


if __name__ == "__main__":
    main()
