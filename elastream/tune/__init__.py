"""`elastream tune`: the core's configuration tuning (elasticity.tuning) run against the real local PySpark job."""
