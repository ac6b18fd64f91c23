"""Hold every reported serving measurement against its derived bounds, once, for the jobs that read the result.

Arguments: the file to save it in, the view (kvwall.inputs.views), the serving measurements, the validation map and
the folder of check stamps.
"""

import sys

from kvwall.inputs.views import load_view
from kvwall.job import finish
from kvwall.validation.run import save_validation, validate_file

output, view_path, measurements, validation_map, stamps = sys.argv[1:]
save_validation(output, *validate_file(measurements, validation_map, load_view(view_path).catalog, stamps))
finish()
