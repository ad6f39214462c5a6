"""The parameters of Nexmark's queries as spark_apps.nexmark runs them, in plain numbers: the queries read them, and
so does nexmark.reference, which computes their expected output without Spark (this module imports nothing)."""

WATERMARK_MS = 5_000  # events are written in time order round-robin over the partitions: far more than their skew
Q5_SIZE_MS, Q5_SLIDE_MS = 10_000, 2_000  # hot items: sliding windows
Q8_WINDOW_MS = 10_000  # monitor new users: tumbling window
Q2_MODULUS = 123  # filter: auctions whose id is a multiple of it
Q3_STATES, Q3_CATEGORY = ("OR", "ID", "CA"), 10  # local item suggestion
EURO_PER_MILLE_DOLLAR = 908  # currency map: euro cents per 1,000 dollar cents
