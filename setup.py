"""Map the top-level folders onto one import namespace: dsl/ → stepgraph.dsl, and so on.

`stepgraph` itself is an implicit namespace package, so nothing we install shadows the
`steps/` folder that every BDD project of our users already has. Metadata lives in pyproject.toml;
this file only lists the packages under each mapped folder and the run-time data they read.

Run-time data that people also read and copy stays in examples/ (world profiles, ready-to-apply
manifests) and is shipped inside the package that reads it (DATA), so an installed stepgraph needs
no checkout. Code finds every file it ships with importlib.resources, never by a path relative to
its source file.

The development install is a strict editable one (`make` runs `pip install -e . --config-settings
editable_mode=strict`): a tree of links under build/ that has exactly the wheel's layout, so
mypy, pyright and import-linter resolve `stepgraph.*` like the interpreter does.
"""

from setuptools import find_namespace_packages, setup

FOLDERS = {
    "command": "stepgraph.command",
    "dsl": "stepgraph.dsl",
    "steps": "stepgraph.steps",
    "targets": "stepgraph.targets",
    "twin": "stepgraph.twin",
}
DATA = {
    "examples/profiles": "stepgraph.twin.profiles",
    "examples/manifests/target": "stepgraph.steps.manifests.target",
    "examples/manifests/kaim": "stepgraph.steps.manifests.kaim",
}
# Files that are not Python but ship: schemas, world/SKU data, templates, C sources of the twin's
# native libraries, and the py.typed markers (a user's step library type-checks against our API).
# Anything else in a folder (build caches, notes) stays out.
DATA_FILES = ["*.json", "*.yaml", "*.md", "*.html", "*.c", "*.h", "py.typed"]

package_dir = {name: folder for folder, name in FOLDERS.items()} | {name: folder for folder, name in DATA.items()}
packages = [*DATA.values()]
for folder, name in FOLDERS.items():
    packages.append(name)
    packages += [f"{name}.{sub}" for sub in find_namespace_packages(folder, exclude=["*__pycache__*", "*.egg-info"])]

setup(
    package_dir=package_dir,
    packages=packages,
    package_data={name: DATA_FILES for name in packages},
    include_package_data=False,
)
