#!/bin/bash
# Entrypoint of the spark-runner image (spark_apps/Dockerfile), installed as /opt/entrypoint.sh.
#
# Spark on Kubernetes runs its pods through the image's entrypoint:
#   executor      an executor pod: Spark starts it with the argument "executor" and its configuration in
#                 SPARK_* environment variables (driver URL, executor id, cores, memory, app id, pod IP and
#                 name, resource profile, JVM options in SPARK_JAVA_OPT_<n>); this starts
#                 KubernetesExecutorBackend like Spark's own image does
#   driver ARGS   a cluster-mode driver pod: spark-submit --deploy-mode client ARGS
#   CMD ARGS      anything else runs as given (the operator's driver pods set their own command instead:
#                 python3 -m spark_apps.runner ...)
# Whatever runs is exec'd under tini, which reaps zombies and forwards signals.
#
# pip's pyspark has the jars and bin/ of a Spark distribution but no such script: SPARK_HOME is the pyspark
# package directory (set in the image).
set -euo pipefail

die() { echo "entrypoint: $*" >&2; exit 64; }

: "${SPARK_HOME:?entrypoint: SPARK_HOME is not set}"
: "${JAVA_HOME:=/usr/lib/jvm/java-17}"
export SPARK_HOME JAVA_HOME

# the classpath of Spark's image: configuration first, then the jars, extra entries, the working directory
classpath="${SPARK_CLASSPATH:+$SPARK_CLASSPATH:}$SPARK_HOME/jars/*"
[ -n "${SPARK_EXTRA_CLASSPATH:-}" ] && classpath="$classpath:$SPARK_EXTRA_CLASSPATH"
[ -n "${HADOOP_CONF_DIR:-}" ] && classpath="$HADOOP_CONF_DIR:$classpath"
classpath="${SPARK_CONF_DIR:-$SPARK_HOME/conf}:$classpath"
[ -n "${SPARK_DIST_CLASSPATH:-}" ] && classpath="$classpath:$SPARK_DIST_CLASSPATH"
classpath="$classpath:$PWD"

# SPARK_JAVA_OPT_0, SPARK_JAVA_OPT_1, ... in numeric order (values may contain anything, even newlines)
java_opts=()
while read -r n; do
  name="SPARK_JAVA_OPT_$n"
  java_opts+=("${!name}")
done < <(compgen -e | sed -n 's/^SPARK_JAVA_OPT_\([0-9][0-9]*\)$/\1/p' | sort -n)

case "${1:-}" in
  executor)
    shift
    missing=()
    for v in SPARK_DRIVER_URL SPARK_EXECUTOR_ID SPARK_EXECUTOR_CORES SPARK_EXECUTOR_MEMORY SPARK_APPLICATION_ID \
             SPARK_EXECUTOR_POD_IP SPARK_RESOURCE_PROFILE_ID SPARK_EXECUTOR_POD_NAME; do
      [ -n "${!v:-}" ] || missing+=("$v")
    done
    [ ${#missing[@]} -eq 0 ] || die "executor: ${missing[*]} not set (Spark on Kubernetes sets them)"
    set -- "$JAVA_HOME/bin/java" "${java_opts[@]}" \
      -Xms"$SPARK_EXECUTOR_MEMORY" -Xmx"$SPARK_EXECUTOR_MEMORY" -cp "$classpath" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "$SPARK_DRIVER_URL" --executor-id "$SPARK_EXECUTOR_ID" --cores "$SPARK_EXECUTOR_CORES" \
      --app-id "$SPARK_APPLICATION_ID" --hostname "$SPARK_EXECUTOR_POD_IP" \
      --resourceProfileId "$SPARK_RESOURCE_PROFILE_ID" --podName "$SPARK_EXECUTOR_POD_NAME" "$@"
    ;;
  driver)
    shift
    [ -n "${SPARK_DRIVER_BIND_ADDRESS:-}" ] || die "driver: SPARK_DRIVER_BIND_ADDRESS not set"
    set -- "$SPARK_HOME/bin/spark-submit" \
      --conf "spark.driver.bindAddress=$SPARK_DRIVER_BIND_ADDRESS" \
      --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=$SPARK_DRIVER_BIND_ADDRESS" \
      --deploy-mode client "$@"
    ;;
  "")
    die "usage: executor | driver SPARK_SUBMIT_ARGS... | COMMAND [ARGS...]"
    ;;
esac
exec /usr/bin/tini -s -- "$@"
