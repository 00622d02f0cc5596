"""daterange: inclusive date ranges, month arithmetic, business days and range parsing."""

from daterange.business import add_business_days, business_days_between, is_business_day
from daterange.errors import DateRangeError, InvalidRange, ParseError
from daterange.months import add_months, days_in_month, is_leap_year, month_end, months_between
from daterange.parsing import format_range, iso_week, parse_date, parse_range
from daterange.ranges import DateRange, gaps, merge_ranges

__all__ = ["DateRange", "DateRangeError", "InvalidRange", "ParseError", "add_business_days", "add_months",
           "business_days_between", "days_in_month", "format_range", "gaps", "is_business_day", "is_leap_year",
           "iso_week", "merge_ranges", "month_end", "months_between", "parse_date", "parse_range"]
__version__ = "0.7"
