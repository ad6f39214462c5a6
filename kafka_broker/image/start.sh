#!/bin/sh
# A one-node KRaft broker (broker and controller in one process), as the Kafka image runs it:
# /etc/kafka/server.properties (a ConfigMap) with @POD_IP@ replaced by $POD_IP, the log directory formatted with
# $CLUSTER_ID on first start, then the broker in the foreground. $KAFKA_HEAP: the JVM's heap (default 512m).
set -e
DATA=/var/lib/kafka
sed "s/@POD_IP@/$POD_IP/" /etc/kafka/server.properties > "$DATA/server.properties"
run() {
  exec_="$1"; shift
  $exec_ java "-Xmx${KAFKA_HEAP:-512m}" -XX:+UseSerialGC -Dkafka.logs.dir="$DATA/logs" \
    -Dlog4j2.configurationFile=/opt/kafka/log4j2.xml -cp "/opt/kafka/lib/*" "$@"
}
run "" kafka.tools.StorageTool format -t "$CLUSTER_ID" -c "$DATA/server.properties" --ignore-formatted
run exec kafka.Kafka "$DATA/server.properties"
