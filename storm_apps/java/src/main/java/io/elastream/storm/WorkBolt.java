package io.elastream.storm;

import java.util.Map;
import org.apache.storm.task.OutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.base.BaseRichBolt;
import org.apache.storm.tuple.Fields;
import org.apache.storm.tuple.Tuple;
import org.apache.storm.tuple.Values;

/**
 * A bolt with a per-tuple cost spent waiting (Thread.sleep), as a bolt that calls a remote service does. Each
 * executor is one thread, so its capacity is executors x 1000 / costMs tuples per second: executors matter, also on
 * a 2-core machine (a Python multilang bolt runs one process per task whatever the executors).
 *
 * Input and output fields: (seq, part, parts, word). Modes:
 *   split: the input carries a sentence in `word`; one tuple per word, part = its index, parts = the word count;
 *   count: counts words (state per task, keyed by fieldsGrouping on word) and forwards the tuple;
 *   forward: forwards the tuple.
 * Every emit is anchored and the input acked, so a tuple lost in a restart is failed and replayed by the spout.
 */
public class WorkBolt extends BaseRichBolt {
    private final String mode;
    private final double costMs;
    private transient OutputCollector out;
    private transient Map<String, Long> counts;

    public WorkBolt(String mode, Double costMs) {
        this.mode = mode;
        this.costMs = costMs;
    }

    @Override
    public void prepare(Map<String, Object> conf, TopologyContext context, OutputCollector collector) {
        this.out = collector;
        this.counts = new java.util.HashMap<>();
    }

    @Override
    public void execute(Tuple t) {
        work();
        long seq = number(t, "seq");
        String word = t.getStringByField("word");
        if ("split".equals(mode)) {
            String[] words = word.split(" ");
            for (int i = 0; i < words.length; i++) {
                out.emit(t, new Values(seq, (long) i, (long) words.length, words[i]));
            }
        } else {
            if ("count".equals(mode)) {
                counts.merge(word, 1L, Long::sum);
            }
            out.emit(t, new Values(seq, number(t, "part"), number(t, "parts"), word));
        }
        out.ack(t);
    }

    /** A Python spout's numbers arrive as Integer or Long (JSON): read either. */
    private static long number(Tuple t, String field) {
        return ((Number) t.getValueByField(field)).longValue();
    }

    private void work() {
        if (costMs <= 0) {
            return;
        }
        long micros = Math.round(costMs * 1000.0);
        try {
            Thread.sleep(micros / 1000, (int) (micros % 1000) * 1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void declareOutputFields(OutputFieldsDeclarer declarer) {
        declarer.declare(new Fields("seq", "part", "parts", "word"));
    }
}
