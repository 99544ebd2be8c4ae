"""Package map: the repository's top-level folders install as sub-packages of ``theorylab``.

``mdps/`` -> ``theorylab.mdps``, ``algorithms/`` -> ``theorylab.algorithms``, ``bounds/`` ->
``theorylab.bounds``, ``validations/`` -> ``theorylab.validations`` (see docs/architecture.md).
Package data (``package_data``) is listed here too. Everything else is configured in
pyproject.toml.
"""

from setuptools import find_packages, setup

SUBPACKAGES = ("mdps", "algorithms", "bounds", "validations")

packages = ["theorylab"] + [p for p in find_packages(include=["theorylab.*"])]
package_dir = {"theorylab": "theorylab"}
for folder in SUBPACKAGES:
    packages.append(f"theorylab.{folder}")
    package_dir[f"theorylab.{folder}"] = folder
    packages += [f"theorylab.{folder}.{sub}" for sub in find_packages(where=folder)]

# data inside the packages: the seed catalogue the papers index reads (theorylab.seed_catalogue)
package_data = {"theorylab": ["data/seed_papers.json"]}

setup(packages=sorted(set(packages)), package_dir=package_dir, package_data=package_data)
