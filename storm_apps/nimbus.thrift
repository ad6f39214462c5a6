# The part of Storm 2.8's Nimbus service (storm-client/src/storm.thrift) that elastream calls, with Storm's own
# field ids. Storm ships its IDL in no jar, so this subset is ours; thriftpy2 loads it at run time. Every field is
# optional here: a reader skips fields it does not know, and we never send the structs we only read.

struct GlobalStreamId {
  1: optional string componentId;
  2: optional string streamId;
}

struct BoltStats {
  1: optional map<string, map<GlobalStreamId, i64>> acked;
  2: optional map<string, map<GlobalStreamId, i64>> failed;
  3: optional map<string, map<GlobalStreamId, double>> process_ms_avg;
  4: optional map<string, map<GlobalStreamId, i64>> executed;
  5: optional map<string, map<GlobalStreamId, double>> execute_ms_avg;
}

struct SpoutStats {
  1: optional map<string, map<string, i64>> acked;
  2: optional map<string, map<string, i64>> failed;
  3: optional map<string, map<string, double>> complete_ms_avg;
}

union ExecutorSpecificStats {
  1: BoltStats bolt;
  2: SpoutStats spout;
}

struct ExecutorStats {
  1: optional map<string, map<string, i64>> emitted;
  2: optional map<string, map<string, i64>> transferred;
  3: optional ExecutorSpecificStats specific;
  4: optional double rate;
}

struct ExecutorInfo {
  1: optional i32 task_start;
  2: optional i32 task_end;
}

struct ExecutorSummary {
  1: optional ExecutorInfo executor_info;
  2: optional string component_id;
  3: optional string host;
  4: optional i32 port;
  5: optional i32 uptime_secs;
  7: optional ExecutorStats stats;
}

struct ErrorInfo {
  1: optional string error;
  2: optional i32 error_time_secs;
  3: optional string host;
  4: optional i32 port;
}

struct TopologyInfo {
  1: optional string id;
  2: optional string name;
  3: optional i32 uptime_secs;
  4: optional list<ExecutorSummary> executors;
  5: optional string status;
  6: optional map<string, list<ErrorInfo>> errors;
}

struct TopologySummary {
  1: optional string id;
  2: optional string name;
  3: optional i32 num_tasks;
  4: optional i32 num_executors;
  5: optional i32 num_workers;
  6: optional i32 uptime_secs;
  7: optional string status;
}

struct SupervisorSummary {
  1: optional string host;
  2: optional i32 uptime_secs;
  3: optional i32 num_workers;
  4: optional i32 num_used_workers;
  5: optional string supervisor_id;
}

struct NimbusSummary {
  1: optional string host;
  2: optional i32 port;
  3: optional i32 uptime_secs;
  4: optional bool isLeader;
  5: optional string version;
}

struct WorkerSummary {
  1: optional string supervisor_id;
  2: optional string host;
  3: optional i32 port;
  4: optional string topology_id;
}

struct TopologyPageInfo {
  1: optional string id;
  2: optional string name;
  16: optional list<WorkerSummary> workers;
}

struct ClusterSummary {
  1: optional list<SupervisorSummary> supervisors;
  3: optional list<TopologySummary> topologies;
  4: optional list<NimbusSummary> nimbuses;
}

struct KillOptions {
  1: optional i32 wait_secs;
}

struct RebalanceOptions {
  1: optional i32 wait_secs;
  2: optional i32 num_workers;
  3: optional map<string, i32> num_executors;
  5: optional string topology_conf_overrides;
}

struct Opaque {
}

struct ComponentCommon {
  1: optional map<GlobalStreamId, Opaque> inputs;
}

struct SpoutSpec {
  2: optional ComponentCommon common;
}

struct Bolt {
  2: optional ComponentCommon common;
}

struct StormTopology {
  1: optional map<string, SpoutSpec> spouts;
  2: optional map<string, Bolt> bolts;
}

exception NotAliveException {
  1: optional string msg;
}

exception InvalidTopologyException {
  1: optional string msg;
}

exception AuthorizationException {
  1: optional string msg;
}

service Nimbus {
  void killTopologyWithOpts(1: string name, 2: KillOptions options) throws (1: NotAliveException e, 2: AuthorizationException aze);
  void rebalance(1: string name, 2: RebalanceOptions options) throws (1: NotAliveException e, 2: InvalidTopologyException ite, 3: AuthorizationException aze);
  ClusterSummary getClusterInfo() throws (1: AuthorizationException aze);
  TopologySummary getTopologySummaryByName(1: string name) throws (1: AuthorizationException aze);
  StormTopology getUserTopology(1: string id) throws (1: NotAliveException e, 2: AuthorizationException aze);
  TopologyInfo getTopologyInfo(1: string id) throws (1: NotAliveException e, 2: AuthorizationException aze);
  TopologyPageInfo getTopologyPageInfo(1: string id, 2: string window, 3: bool is_include_sys) throws (1: NotAliveException e, 2: AuthorizationException aze);
  string getNimbusConf() throws (1: AuthorizationException aze);
}
