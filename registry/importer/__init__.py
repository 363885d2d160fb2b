"""`registry import`: lab capsules of any layout sealed as imported records.

walk (the capsule's own files, links refused) -> manifest (checked) -> layout (arms and
the role of each file) -> declared (launch/env files, non-default args) + labbench (rows)
+ published (the lab's figures, re-derived) + status (the lab's outcome) -> capsule (one
record per arm) -> folder (many capsules).
"""

from registry.importer.capsule import ImportedRecord, Options, import_capsule
from registry.importer.folder import FolderImport, Problem, import_folder
from registry.importer.labbench import convert_bench

__all__ = ["FolderImport", "ImportedRecord", "Options", "Problem", "convert_bench",
           "import_capsule", "import_folder"]
