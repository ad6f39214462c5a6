import subprocess
import sys

MODULES = [
    "elasticity", "elasticity.model", "elasticity.config", "elasticity.ports", "elasticity.adapters",
    "elasticity.guards", "elasticity.autoscaler", "elasticity.policies", "elasticity.simulation.runner",
    "elasticity.simulation.loads", "elasticity.simulation.oracle", "elasticity.simulation.cli",
    "elasticity.simulation.plot", "elasticity.benchmark",
]


def test_core_imports_no_kubernetes_kopf_pyspark_or_operator_code():
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in MODULES)
        + "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('kubernetes', 'kopf', 'pyspark', 'elastream', 'controllers')]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"the core imported {out.stdout.strip()}"
