"""The Spark settings in-place rescaling needs, in any driver (elastream's runner, or a user's application started
with the plugin). No pyspark import: the operator builds a driver's configuration from it."""

IN_PLACE_CONF = {
    "spark.dynamicAllocation.enabled": "false",  # elastream decides the executor count; the two would fight
    # graceful scale-down: migrate shuffle and cached blocks off a decommissioned executor, retrying every 2 s
    # instead of the default 30 s (a scale-down otherwise takes ~31 s)
    "spark.decommission.enabled": "true",
    "spark.storage.decommission.enabled": "true",
    "spark.storage.decommission.shuffleBlocks.enabled": "true",
    "spark.storage.decommission.rddBlocks.enabled": "true",
    "spark.storage.decommission.replicationReattemptInterval": "2s",
    # without this, state-store tasks stick to the executors that already hold the state and a new executor
    # sits idle
    "spark.locality.wait": "0s",
}
