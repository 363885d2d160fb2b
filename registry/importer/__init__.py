"""`registry import`: lab capsules of any layout sealed as imported records.

walk (the capsule's own files, links refused) -> manifest (checked) -> layout (arms and
the role of each file) -> declared (launch/env files, non-default args) + labbench (rows)
+ published (the lab's figures, re-derived) + status (the lab's outcome) -> capsule (one
record per arm: `import_capsule`) -> folder (many capsules: `import_folder`). Import
the submodule you need: `show` reads `findings` without the sealing machinery.
"""

from registry.importer.labbench import convert_bench

__all__ = ["convert_bench"]
