"""Map the top-level folders onto one import namespace: dsl/ → stepgraph.dsl, and so on.

`stepgraph` itself is an implicit namespace package, so nothing we install shadows the
`steps/` folder that every BDD project of our users already has. Metadata lives in pyproject.toml;
this file only discovers the sub-packages (and package data) under each mapped folder.
"""

from setuptools import find_packages, setup

FOLDERS = {
    "dsl": "stepgraph.dsl",
    "steps": "stepgraph.steps",
    "targets": "stepgraph.targets",
    "twin": "stepgraph.twin",
}

package_dir = {name: folder for folder, name in FOLDERS.items()}
packages = []
for folder, name in FOLDERS.items():
    packages.append(name)
    packages += [f"{name}.{sub}" for sub in find_packages(folder)]

setup(
    package_dir=package_dir,
    packages=packages,
    package_data={name: ["**/*.json", "**/*.yaml", "**/*.py.txt", "**/*.md", "**/*.html", "probes/*", "native/*.c"] for name in packages},
    include_package_data=True,
)
