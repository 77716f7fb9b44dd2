"""The HTTP contract: requests sent with `requests` (or upstream's clients), statuses and bodies."""
