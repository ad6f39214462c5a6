"""`elastream bench rescale`: on a cluster, from a scaling decision (spec.replicas written) to a new executor pod
processing its first task, and the scale-in back. timeline.py is pure (parsing, phases, statistics, tables);
cluster.py reads the cluster."""
