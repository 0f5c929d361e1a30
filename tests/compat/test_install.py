"""Installing pubsub-go never installs, upgrades or downgrades PySpark, and
an unsupported PySpark is refused at import with an error that names the
installed version, the supported range and what to do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.compat
ROOT = Path(__file__).resolve().parents[2]


def test_pyspark_is_no_dependency_and_the_spark_extra_accepts_every_supported_version():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    from pubsub_go._spark_version import SUPPORTED_RANGE

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = [d.replace(" ", "").lower() for d in meta["dependencies"]]
    assert not [d for d in deps if d.startswith("pyspark")], deps
    spark_extra = [d.replace(" ", "") for d in meta["optional-dependencies"]["spark"] if d.startswith("pyspark")]
    assert spark_extra == [f"pyspark{SUPPORTED_RANGE}"], spark_extra
    assert "Spark 4.0" in meta["description"], meta["description"]


def fake_pyspark(tmp_path: Path, version: str) -> Path:
    pkg = tmp_path / "pyspark"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise RuntimeError('pubsub_go must not import pyspark to check it')\n")
    (pkg / "version.py").write_text(f'__version__: str = "{version}"\n')
    return tmp_path


def import_with(path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(path))
    return subprocess.run([sys.executable, "-c", "import pubsub_go; print('imported', pubsub_go.__version__)"],
                          capture_output=True, text=True, env=env, cwd=str(path), timeout=60)


def test_importing_on_pyspark_3_5_works_and_registering_names_the_versions_and_the_fix(tmp_path):
    path = fake_pyspark(tmp_path, "3.5.6")
    r = import_with(path)
    assert r.returncode == 0 and "imported" in r.stdout, r.stderr[-2000:]
    env = dict(os.environ, PYTHONPATH=str(path))
    r = subprocess.run([sys.executable, "-c", "import pubsub_go; pubsub_go.register(None)"],
                       capture_output=True, text=True, env=env, cwd=str(path), timeout=60)
    assert r.returncode != 0, r.stdout
    assert "UnsupportedSparkError" in r.stderr, r.stderr[-2000:]
    for words in ("PySpark 3.5.6 is installed", ">=4.0,<5", "pip install 'pyspark>=4.0,<5'", "Dataproc image 3.0",
                  "pubsub_go.configure_spark"):
        assert words in r.stderr, (words, r.stderr[-2000:])


@pytest.mark.parametrize("version", ["4.0.5", "4.3.0"])
def test_importing_on_a_supported_pyspark_does_not_import_it(tmp_path, version):
    r = import_with(fake_pyspark(tmp_path, version))
    assert r.returncode == 0 and "imported" in r.stdout, r.stderr[-2000:]


def test_pip_install_keeps_the_installed_pyspark():
    """Run by scripts/compat.sh in each venv, with the wheel under test:
    `pip install <wheel>` and `pip install "<wheel>[spark]"` leave the
    venv's PySpark as it was."""
    wheel = os.environ.get("PUBSUB_GO_WHEEL")
    if not wheel:
        pytest.skip("PUBSUB_GO_WHEEL (the wheel under test) is not set; scripts/compat.sh sets it")
    import pyspark

    before = pyspark.__version__
    for spec in (wheel, f"{wheel}[spark]"):
        r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--force-reinstall", "--no-deps",
                            spec], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", spec],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        v = subprocess.run([sys.executable, "-c", "import pyspark; print(pyspark.__version__)"],
                           capture_output=True, text=True, timeout=120).stdout.strip()
        assert v == before, f"pip install {spec} changed PySpark from {before} to {v}"
