"""A Spark Structured Streaming word count, written as anyone would write one: it reads a Kafka topic through
Spark's own connector, looks each word up (a slow call, as to an outside service), keeps a running count per word
(state) and writes the counts to another Kafka topic. It imports nothing from elastream.

    spark-submit --packages org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0 wordcount.py \\
        BOOTSTRAP_SERVERS INPUT_TOPIC OUTPUT_TOPIC CHECKPOINT_DIR
"""
import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType


@F.udf(StringType())
def lookup(word):
    time.sleep(0.0002)  # 200 us, as a call to a dictionary service would take
    return word.lower()


def main(bootstrap, input_topic, output_topic, checkpoint):
    spark = SparkSession.builder.appName("wordcount").getOrCreate()
    lines = (spark.readStream.format("kafka")
             .option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", input_topic)
             .option("startingOffsets", "earliest")
             .load())
    words = lines.select(F.explode(F.split(F.col("value").cast("string"), " ")).alias("word"))
    counts = words.select(lookup("word").alias("word")).groupBy("word").count()
    query = (counts.select(F.col("word").alias("key"), F.col("count").cast("string").alias("value"))
             .writeStream.format("kafka")
             .option("kafka.bootstrap.servers", bootstrap)
             .option("topic", output_topic)
             .option("checkpointLocation", checkpoint)
             .outputMode("update")
             .queryName("wordcount")
             .trigger(processingTime="3 seconds")
             .start())
    query.awaitTermination()


if __name__ == "__main__":
    main(*sys.argv[1:5])
