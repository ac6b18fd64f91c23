"""jsonschema, imported without the format libraries it loads whenever they are installed.

On import, jsonschema registers a format checker for every optional library it finds (fqdn, idna, rfc3987,
rfc3987_syntax, webcolors, ...). Packages such as Jupyter's bring them in, and rfc3987_syntax alone compiles a
grammar on import: seconds for every pipeline job and every `kvwall` answer. kvwall's schemas use no `format`
keyword and its validators take no format checker, so these libraries are kept out while jsonschema is imported,
and the checks behave the same whatever else is installed.
"""

from __future__ import annotations

import sys

#: The optional libraries jsonschema._format imports when present.
FORMAT_LIBRARIES = ("fqdn", "idna", "rfc3987", "rfc3986_validator", "rfc3987_syntax", "rfc3339_validator",
                    "webcolors", "jsonpointer", "uri_template", "isoduration")


def _import_without_format_libraries():
    held_back = [name for name in FORMAT_LIBRARIES if name not in sys.modules]
    for name in held_back:
        sys.modules[name] = None  # an import of it raises ImportError, which jsonschema expects
    try:
        import jsonschema
        import jsonschema.exceptions
    finally:
        for name in held_back:
            if sys.modules.get(name, False) is None:
                del sys.modules[name]
    return jsonschema


jsonschema = _import_without_format_libraries()
