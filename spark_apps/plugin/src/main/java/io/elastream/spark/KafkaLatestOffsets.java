package io.elastream.spark;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A Kafka broker's end offsets, through kafka-clients (on the driver's classpath with Spark's Kafka connector). A
 * consumer with no group: it reads offsets, never records, and commits nothing.
 */
final class KafkaLatestOffsets implements LatestOffsets {
    private final Properties props = new Properties();
    private KafkaConsumer<byte[], byte[]> consumer;

    KafkaLatestOffsets(Map<String, String> settings) {
        props.putAll(settings);
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        props.putIfAbsent("client.id", "elastream-plugin");
        props.putIfAbsent("request.timeout.ms", "3000");
        props.putIfAbsent("default.api.timeout.ms", "3000");
    }

    @Override
    public synchronized Map<String, Map<Integer, Long>> latest(Map<String, Set<Integer>> partitions) {
        if (consumer == null) {
            consumer = new KafkaConsumer<>(props);
        }
        List<TopicPartition> wanted = new ArrayList<>();
        partitions.forEach((topic, parts) -> parts.forEach(p -> wanted.add(new TopicPartition(topic, p))));
        Map<String, Map<Integer, Long>> out = new HashMap<>();
        consumer.endOffsets(wanted, Duration.ofSeconds(2)).forEach((tp, offset) ->
                out.computeIfAbsent(tp.topic(), t -> new HashMap<>()).put(tp.partition(), offset));
        return out;
    }

    @Override
    public synchronized void close() {
        if (consumer != null) {
            consumer.close(Duration.ofSeconds(1));
            consumer = null;
        }
    }
}
