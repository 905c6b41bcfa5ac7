"""Statistics over stored samples: summaries and confidence intervals, significance
tests, fitted trends, and the order-effect check."""
