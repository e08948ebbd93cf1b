"""Packaging glue that pyproject.toml alone cannot express.

The top-level models/ folder (robot descriptions, package.xml) ships inside the wheel as the data
package `drakebots._models`, so `package://drakebots/...` resolves the same way from a source
checkout, an editable install and an installed wheel (see drakebots/models.py).
"""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["drakebots", "drakebots.*"]) + ["drakebots._models"],
    package_dir={"drakebots._models": "models"},
)
