"""The pod fields a real Spark job needs on its driver and executors, as spark-operator's SparkApplication names them:
environment (from Secrets too: Kafka or object-store credentials), extra volumes, scheduling, labels.

Typed as the Kubernetes API types they become, but narrower where a StreamApp must not reach: a volume is a
ConfigMap, a Secret, an emptyDir or a claim of the namespace (no hostPath), and the names and paths the operator
uses itself are refused, so a user's field can never replace the shared volume, the control token or the config.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from elastream.api.base import (K8S_QUANTITY_PATTERN, NAME_PATTERN, QUANTITY_PATTERN, ApiModel, Rule, keys_rule,
                                not_in_rule)

VOLUME_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"  # DNS-1123 label, as a pod's volume names
ENV_NAME_PATTERN = r"^[-._a-zA-Z][-._a-zA-Z0-9]*$"  # what the API server accepts for an environment variable
# what the operator itself puts in the driver and executor pods (elastream.engines.spark.managed)
RESERVED_VOLUMES = ("data", "config", "token")
# the operator's mounts, and Spark's: the executors' configuration volume (Constants.SPARK_CONF_DIR_INTERNAL)
RESERVED_PATHS = ("/var/lib/elastream", "/etc/elastream", "/var/run/elastream", "/opt/spark/conf")
RESERVED_ENV = ("SPARK_CONF_DIR", "POD_IP")
RESERVED_LABEL_PREFIX = "elastream.io/"
NOT_A_RESERVED_VOLUME = not_in_rule("name", RESERVED_VOLUMES,
                                    f"volume names {', '.join(RESERVED_VOLUMES)} are the operator's own")


class KeyRef(ApiModel):
    name: str = Field(..., pattern=NAME_PATTERN, max_length=253, description="a Secret or ConfigMap of the namespace")
    key: str = Field(..., min_length=1, max_length=253, pattern=r"^[-._a-zA-Z0-9]+$")
    optional: bool | None = None


class FieldRef(ApiModel):
    field_path: str = Field(..., min_length=1, max_length=256, description="e.g. metadata.name, status.podIP")


class EnvVarSource(ApiModel):
    rules = (Rule("(has(self.secretKeyRef) ? 1 : 0) + (has(self.configMapKeyRef) ? 1 : 0) + "
                  "(has(self.fieldRef) ? 1 : 0) == 1",
                  "valueFrom takes exactly one of secretKeyRef, configMapKeyRef or fieldRef",
                  lambda s: sum(x is not None for x in (s.secret_key_ref, s.config_map_key_ref, s.field_ref)) == 1),)

    secret_key_ref: KeyRef | None = None
    config_map_key_ref: KeyRef | None = None
    field_ref: FieldRef | None = None


class EnvVar(ApiModel):
    rules = (Rule("!(has(self.value) && has(self.valueFrom))", "set value or valueFrom, not both",
                  lambda e: e.value is None or e.value_from is None, ".valueFrom"),
             not_in_rule("name", RESERVED_ENV, f"the operator sets {', '.join(RESERVED_ENV)} itself"))

    name: str = Field(..., min_length=1, max_length=256, pattern=ENV_NAME_PATTERN)
    value: str | None = Field(None, max_length=32768)
    value_from: EnvVarSource | None = None


class NameRef(ApiModel):
    name: str = Field(..., pattern=NAME_PATTERN, max_length=253)
    optional: bool | None = None


class EnvFromSource(ApiModel):
    rules = (Rule("has(self.secretRef) != has(self.configMapRef)", "envFrom takes exactly one of secretRef or "
                  "configMapRef", lambda s: (s.secret_ref is None) != (s.config_map_ref is None)),)

    prefix: str | None = Field(None, max_length=256, pattern=ENV_NAME_PATTERN)
    secret_ref: NameRef | None = Field(None, description="every key of a Secret of the namespace")
    config_map_ref: NameRef | None = Field(None, description="every key of a ConfigMap of the namespace")


class Toleration(ApiModel):
    rules = (Rule("self.operator != 'Exists' || !has(self.value)", "a toleration with operator Exists has no value",
                  lambda t: t.operator != "Exists" or t.value is None, ".value"),
             Rule("has(self.key) || self.operator == 'Exists'", "a toleration without a key needs operator Exists",
                  lambda t: t.key is not None or t.operator == "Exists", ".operator"),
             Rule("!has(self.tolerationSeconds) || (has(self.effect) && self.effect == 'NoExecute')",
                  "tolerationSeconds goes with effect NoExecute only",
                  lambda t: t.toleration_seconds is None or t.effect == "NoExecute", ".tolerationSeconds"))

    key: str | None = Field(None, max_length=317)
    operator: Literal["Exists", "Equal"] = "Equal"
    value: str | None = Field(None, max_length=63)
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: int | None = Field(None, ge=0, le=31_536_000)


class VolumeMount(ApiModel):
    rules = (Rule("!has(self.subPath) || !(self.subPath == '..' || self.subPath.startsWith('../') || "
                  "self.subPath.contains('/../') || self.subPath.endsWith('/..'))",
                  "subPath must stay inside the volume (no ..)",
                  lambda m: m.sub_path is None or ".." not in m.sub_path.split("/"), ".subPath"),
             NOT_A_RESERVED_VOLUME,
             Rule("!(" + " || ".join(f"self.mountPath == '{p}' || self.mountPath.startsWith('{p}/')"
                                     for p in RESERVED_PATHS) + ")",
                  f"mountPath must not be under {', '.join(RESERVED_PATHS)}: the operator mounts them",
                  lambda m: not any(m.mount_path == p or m.mount_path.startswith(p + "/") for p in RESERVED_PATHS),
                  ".mountPath"))

    name: str = Field(..., pattern=VOLUME_NAME_PATTERN, max_length=63, description="a volume of spec.spark.volumes")
    mount_path: str = Field(..., min_length=2, max_length=1024, pattern=r"^/[^:]*$")
    read_only: bool | None = None
    sub_path: str | None = Field(None, min_length=1, max_length=1024, pattern=r"^[^/][^:]*$",
                                 description="a path inside the volume, relative, without ..")


class KeyToPath(ApiModel):
    key: str = Field(..., min_length=1, max_length=253)
    path: str = Field(..., min_length=1, max_length=1024, pattern=r"^[^/]")


class ConfigMapVolume(ApiModel):
    name: str = Field(..., pattern=NAME_PATTERN, max_length=253)
    items: list[KeyToPath] | None = Field(None, max_length=64)
    optional: bool | None = None


class SecretVolume(ApiModel):
    secret_name: str = Field(..., pattern=NAME_PATTERN, max_length=253)
    items: list[KeyToPath] | None = Field(None, max_length=64)
    optional: bool | None = None


class EmptyDirVolume(ApiModel):
    medium: Literal["", "Memory"] | None = None
    size_limit: str | None = Field(None, pattern=K8S_QUANTITY_PATTERN, max_length=32)


class ClaimVolume(ApiModel):
    claim_name: str = Field(..., pattern=NAME_PATTERN, max_length=253)
    read_only: bool | None = None


class Volume(ApiModel):
    """One extra volume: a ConfigMap, a Secret, an emptyDir or a PersistentVolumeClaim of the namespace."""

    rules = (Rule("(has(self.configMap) ? 1 : 0) + (has(self.secret) ? 1 : 0) + (has(self.emptyDir) ? 1 : 0) + "
                  "(has(self.persistentVolumeClaim) ? 1 : 0) == 1",
                  "a volume takes exactly one of configMap, secret, emptyDir or persistentVolumeClaim",
                  lambda v: sum(x is not None for x in (v.config_map, v.secret, v.empty_dir,
                                                        v.persistent_volume_claim)) == 1),
             NOT_A_RESERVED_VOLUME)

    name: str = Field(..., pattern=VOLUME_NAME_PATTERN, max_length=63)
    config_map: ConfigMapVolume | None = None
    secret: SecretVolume | None = None
    empty_dir: EmptyDirVolume | None = None
    persistent_volume_claim: ClaimVolume | None = None


FreeForm = Annotated[dict[str, Any], Field(json_schema_extra={"x-kubernetes-preserve-unknown-fields": True})]


class Affinity(ApiModel):
    """A core/v1 Affinity; each part is passed to the pod as written and checked by the API server when the pod is
    created (a bad one is named in the StreamApp's conditions)."""

    node_affinity: FreeForm | None = None
    pod_affinity: FreeForm | None = None
    pod_anti_affinity: FreeForm | None = None


Label = Annotated[str, Field(max_length=63, pattern=r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")]


class PodSettings(ApiModel):
    """Resources and pod fields of the driver or of every executor (spark-operator's SparkPodSpec)."""

    rules = (keys_rule("labels", 317, RESERVED_LABEL_PREFIX), keys_rule("annotations", 317, RESERVED_LABEL_PREFIX))

    cores: int = Field(1, ge=1, le=64, description="CPU cores")
    memory: str = Field("1g", pattern=QUANTITY_PATTERN, max_length=16,
                        description='memory as Spark writes it: a whole number and a unit, e.g. "1g" or "768m"')
    memory_overhead: str | None = Field(
        None, pattern=QUANTITY_PATTERN, max_length=16,
        description="memory beyond the JVM heap (spark.driver/executor.memoryOverhead): Python workers, native "
        "buffers; added to the pod's memory request. Unset: executors get Spark's default (10%, at least 384m); "
        "the driver pod requests its memory only")
    env: list[EnvVar] = Field(default_factory=list, max_length=128,
                              description="environment variables (valueFrom: a Secret's or ConfigMap's key)")
    env_from: list[EnvFromSource] = Field(default_factory=list, max_length=32,
                                          description="every key of a Secret or ConfigMap as a variable")
    volume_mounts: list[VolumeMount] = Field(default_factory=list, max_length=32,
                                             description="mounts of spec.spark.volumes")
    service_account: str | None = Field(
        None, pattern=NAME_PATTERN, max_length=253,
        description="the pod's ServiceAccount (e.g. for a cloud identity). The driver's must also allow what "
        "Spark's driver does (docs/api.md#pod-fields). Unset: the operator's <app>-spark for the driver; for the "
        "executors, Spark's default, the driver's account (which may manage pods): name one to give them less")
    labels: dict[str, Label] = Field(default_factory=dict, max_length=64)
    annotations: dict[str, Annotated[str, Field(max_length=4096)]] = Field(default_factory=dict, max_length=64)
    tolerations: list[Toleration] = Field(default_factory=list, max_length=32)
    affinity: Affinity | None = Field(None, description="nodeAffinity, podAffinity, podAntiAffinity, as in a pod")
    priority_class_name: str | None = Field(None, pattern=NAME_PATTERN, max_length=253)

    def pod_spec_fields(self) -> dict[str, Any]:
        """The fields this sets on a pod's spec (scheduling), as the API server spells them."""
        wire = self.to_wire()
        return {k: wire[k] for k in ("tolerations", "affinity", "priorityClassName") if wire.get(k)}

    def container_fields(self) -> dict[str, Any]:
        """The fields this adds to the pod's Spark container."""
        wire = self.to_wire()
        return {k: wire[k] for k in ("env", "envFrom", "volumeMounts") if wire.get(k)}
