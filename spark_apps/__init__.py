"""elastream's PySpark streaming jobs, their driver-side runner, and a local standalone cluster (docs/spark_apps.md)."""
