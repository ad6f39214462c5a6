package example;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.explode;
import static org.apache.spark.sql.functions.split;

import java.util.concurrent.locks.LockSupport;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.streaming.Trigger;
import org.apache.spark.sql.types.DataTypes;

/**
 * A Structured Streaming word count: lines from a Kafka topic, each word looked up (a slow call, as to an outside
 * service), a running count per word, the counts written to another Kafka topic.
 *
 * <p>Arguments: BOOTSTRAP_SERVERS INPUT_TOPIC OUTPUT_TOPIC CHECKPOINT_DIR [LOOKUP_MICROS, default 1000]
 */
public final class WordCount {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String input = args[1];
        String output = args[2];
        String checkpoint = args[3];
        long lookupNanos = 1_000L * (args.length > 4 ? Long.parseLong(args[4]) : 1_000L);
        SparkSession spark = SparkSession.builder().appName("wordcount-jar").getOrCreate();
        spark.udf().register("lookup", (UDF1<String, String>) word -> {
            LockSupport.parkNanos(lookupNanos);  // as a call to a dictionary service would take
            return word.toLowerCase();
        }, DataTypes.StringType);
        Dataset<Row> lines = spark.readStream().format("kafka")
                .option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", input)
                .option("startingOffsets", "earliest")
                .load();
        Dataset<Row> words = lines.select(explode(split(col("value").cast("string"), " ")).alias("word"));
        Dataset<Row> counts = words.selectExpr("lookup(word) AS word").groupBy("word").count();
        counts.selectExpr("word AS key", "CAST(count AS STRING) AS value")
                .writeStream().format("kafka")
                .option("kafka.bootstrap.servers", bootstrap)
                .option("topic", output)
                .option("checkpointLocation", checkpoint)
                .outputMode("update")
                .queryName("wordcount")
                .trigger(Trigger.ProcessingTime("3 seconds"))
                .start()
                .awaitTermination();
    }
}
